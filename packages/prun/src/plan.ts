import { readFileSync } from 'node:fs';
import { dirname, extname, isAbsolute, resolve } from 'node:path';
import { isValidUnitId } from '@prun/unit-state';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const nonBlank = z.string().refine((value) => value.trim() !== '', 'must not be blank');

const UnitSchema = z
  .object({
    id: z.string().refine(isValidUnitId, 'must contain only letters, digits, dashes, or underscores'),
    prompt: nonBlank.optional(),
    prompt_file: nonBlank.optional(),
    mode: z.enum(['plan', 'accept-edits']).optional(),
    add_dirs: z.array(nonBlank).optional(),
    clone: nonBlank.optional(),
    model: nonBlank.optional(),
    depends_on: z.array(z.string()).optional(),
  })
  .strict()
  .superRefine((unit, ctx) => {
    if ((unit.prompt === undefined) === (unit.prompt_file === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['prompt'], message: 'exactly one of prompt or prompt_file is required' });
    }
    // The dispatcher refuses extra directories without an explicit mode: they are the user's
    // own folders, and accept-edits belongs only in disposable ones.
    if (unit.add_dirs && unit.add_dirs.length > 0 && unit.mode === undefined) {
      ctx.addIssue({ code: 'custom', path: ['mode'], message: 'is required when add_dirs is given (plan, or accept-edits for disposable directories only)' });
    }
  });

export const PlanSchema = z
  .object({
    units: z.array(UnitSchema).min(1, 'must list at least one unit'),
  })
  .strict();

export type PlanUnit = z.infer<typeof UnitSchema>;
export type Plan = z.infer<typeof PlanSchema>;

/** A unit ready to dispatch: its prompt read, its paths absolute. */
export interface ResolvedUnit {
  id: string;
  prompt: string;
  mode: 'plan' | 'accept-edits' | null;
  addDirs: string[];
  clone: string | null;
  model: string | null;
  dependsOn: string[];
}

export class PlanError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanError';
  }
}

function fieldPath(path: readonly PropertyKey[], plan: unknown): string {
  let out = '';
  let node: unknown = plan;
  for (const key of path) {
    if (typeof key === 'number') {
      const id = (node as unknown[] | undefined)?.[key] as { id?: unknown } | undefined;
      out += typeof id?.id === 'string' && id.id !== '' ? `[${key}](id ${id.id})` : `[${key}]`;
    } else {
      out += out === '' ? String(key) : `.${String(key)}`;
    }
    node = (node as Record<PropertyKey, unknown> | undefined)?.[key];
  }
  return out || '(top level)';
}

/** Parse plan text (JSON, or YAML for .yaml/.yml files) into a validated plan. */
export function parsePlan(text: string, fileName: string): Plan {
  let raw: unknown;
  const yaml = ['.yaml', '.yml'].includes(extname(fileName).toLowerCase());
  try {
    raw = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new PlanError(`plan ${fileName} is not valid ${yaml ? 'YAML' : 'JSON'}: ${why}`);
  }
  const parsed = PlanSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new PlanError(`plan field ${fieldPath(issue.path, raw)}: ${issue.message}`);
  }
  checkGraph(parsed.data);
  return parsed.data;
}

/** Unique ids, dependencies that exist, no unit depending on itself, no cycle. */
export function checkGraph(plan: Plan): void {
  const ids = new Set<string>();
  for (const [index, unit] of plan.units.entries()) {
    if (ids.has(unit.id)) throw new PlanError(`plan field units[${index}].id: duplicate id ${unit.id}`);
    ids.add(unit.id);
  }
  for (const [index, unit] of plan.units.entries()) {
    for (const dep of unit.depends_on ?? []) {
      if (!ids.has(dep)) throw new PlanError(`plan field units[${index}](id ${unit.id}).depends_on: unknown unit ${dep}`);
      if (dep === unit.id) throw new PlanError(`plan field units[${index}](id ${unit.id}).depends_on: a unit cannot depend on itself`);
    }
  }
  const byId = new Map(plan.units.map((unit) => [unit.id, unit]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const visit = (id: string, trail: string[]): void => {
    if (done.has(id)) return;
    if (visiting.has(id)) throw new PlanError(`plan has a dependency cycle: ${[...trail, id].join(' -> ')}`);
    visiting.add(id);
    for (const dep of byId.get(id)?.depends_on ?? []) visit(dep, [...trail, id]);
    visiting.delete(id);
    done.add(id);
  };
  for (const unit of plan.units) visit(unit.id, []);
}

/** Read a plan file and resolve each unit's prompt and paths relative to the plan's folder. */
export function loadPlan(planPath: string): { plan: Plan; units: ResolvedUnit[] } {
  let text: string;
  try {
    text = readFileSync(planPath, 'utf8');
  } catch (error) {
    throw new PlanError(`cannot read plan ${planPath}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const plan = parsePlan(text, planPath);
  const base = dirname(resolve(planPath));
  const units = plan.units.map((unit, index): ResolvedUnit => {
    let prompt = unit.prompt;
    if (prompt === undefined) {
      const file = isAbsolute(unit.prompt_file!) ? unit.prompt_file! : resolve(base, unit.prompt_file!);
      try {
        prompt = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file));
      } catch (error) {
        const why = (error as NodeJS.ErrnoException).code ?? 'not valid UTF-8';
        throw new PlanError(`plan field units[${index}](id ${unit.id}).prompt_file: cannot read ${file}: ${why}`);
      }
    }
    return {
      id: unit.id,
      prompt,
      mode: unit.mode ?? null,
      addDirs: (unit.add_dirs ?? []).map((dir) => resolve(base, dir)),
      clone: unit.clone === undefined ? null : resolve(base, unit.clone),
      model: unit.model ?? null,
      dependsOn: unit.depends_on ?? [],
    };
  });
  return { plan, units };
}
