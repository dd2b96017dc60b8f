import { CliError, printable } from '@prun/kit/cli';
import { dirname, extname, isAbsolute, resolve } from 'node:path';
import { parsePositiveSeconds, unitIdProblem } from '@prun/dispatcher-agy';
import { readHead } from '@prun/kit/fs';
import { isValidUnitId } from '@prun/unit-state';
import { z } from 'zod';

const nonBlank = z.string().refine((value) => value.trim() !== '', 'must not be blank');

/** The largest plan file prun reads; a plan is a list of units, not data. */
export const MAX_PLAN_BYTES = 8 * 1024 * 1024;
/** The largest prompt prun passes on: far beyond any prompt a worker can use, far below a runaway file. */
export const MAX_PROMPT_BYTES = 1024 * 1024;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Read a small text file without ever blocking or reading without bound (@prun/kit/fs's
 * bounded non-blocking reader): refused unless it is a regular file (a FIFO or a device never
 * hangs the read) no larger than `maxBytes`, decoded as strict UTF-8. Throws PlanError naming
 * `what` and the path.
 */
export function readBoundedText(path: string, maxBytes: number, what: string): string {
  const head = readHead(path, { maxBytes, overflow: 'refuse' });
  if (!head.ok) {
    if (head.problem === 'NotARegularFile') throw new PlanError(`${what}: ${path} is not a regular file`);
    if (head.problem === 'EntryTooLarge') throw new PlanError(`${what}: ${path} is larger than ${maxBytes} bytes`);
    throw new PlanError(`${what}: cannot read ${path}: ${head.problem === 'absent' ? 'ENOENT' : head.problem}`);
  }
  try {
    return UTF8.decode(head.bytes);
  } catch {
    throw new PlanError(`${what}: ${path} is not valid UTF-8`);
  }
}

const UnitSchema = z
  .object({
    id: z
      .string()
      .refine(isValidUnitId, 'must contain only letters, digits, dashes, or underscores')
      .superRefine((id, ctx) => {
        // The dispatcher's own rule (a leading dash, the state directory name's length), so
        // nothing it would refuse gets as far as a worker.
        const problem = isValidUnitId(id) ? unitIdProblem(id) : null;
        if (problem !== null) ctx.addIssue({ code: 'custom', message: `the dispatcher refuses it: ${problem}` });
      }),
    prompt: nonBlank.optional(),
    prompt_file: nonBlank.optional(),
    mode: z.enum(['plan', 'accept-edits']).optional(),
    add_dirs: z.array(nonBlank).optional(),
    clone: nonBlank.optional(),
    model: nonBlank.optional(),
    depends_on: z.array(z.string()).optional(),
    /**
     * Seconds: the unit's own deadline, passed to its dispatcher as its timeout setting
     * (checked by the dispatcher's own rule, a positive whole number).
     */
    timeout: z
      .number()
      .refine((value) => Number.isInteger(value) && parsePositiveSeconds(String(value)) !== null, 'must be a positive whole number of seconds')
      .optional(),
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
  /** The plan's `timeout` (seconds), or null: the dispatcher's own default. */
  timeoutSeconds: number | null;
}

/** A bad plan: a usage error (exit 2) naming the field. */
export class PlanError extends CliError {
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
      // Echoed ids and keys are escaped: a refused id must not clear the screen or set the title.
      out += typeof id?.id === 'string' && id.id !== '' ? `[${key}](id ${printable(id.id)})` : `[${key}]`;
    } else {
      out += out === '' ? printable(String(key)) : `.${printable(String(key))}`;
    }
    node = (node as Record<PropertyKey, unknown> | undefined)?.[key];
  }
  return out || '(top level)';
}

/**
 * The YAML parser, loaded only for a YAML plan: its import costs a JSON plan's batch tens of
 * milliseconds of start-up. Synchronous (require of its CommonJS build, the file an `import`
 * would load too), so loading a plan stays synchronous. `node:module` too is taken only here
 * (process.getBuiltinModule, Node 20.16 and later): on Node 20 a static import of it loads the ES
 * module loader and the source map modules at every `prun batch` and `prun status` start (about
 * 4.6M instructions, a millisecond), for a parser a JSON plan never uses.
 */
function parseYaml(text: string): unknown {
  const { createRequire } = process.getBuiltinModule('node:module');
  const yaml = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yaml.parse(text);
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
      if (!ids.has(dep)) throw new PlanError(`plan field units[${index}](id ${unit.id}).depends_on: unknown unit ${printable(dep)}`);
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
  const text = readBoundedText(planPath, MAX_PLAN_BYTES, 'plan');
  const plan = parsePlan(text, planPath);
  const base = dirname(resolve(planPath));
  const units = plan.units.map((unit, index): ResolvedUnit => {
    let prompt = unit.prompt;
    if (prompt === undefined) {
      const file = isAbsolute(unit.prompt_file!) ? unit.prompt_file! : resolve(base, unit.prompt_file!);
      prompt = readBoundedText(file, MAX_PROMPT_BYTES, `plan field units[${index}](id ${unit.id}).prompt_file`);
    }
    if (Buffer.byteLength(prompt) > MAX_PROMPT_BYTES) {
      throw new PlanError(`plan field units[${index}](id ${unit.id}).prompt: is larger than ${MAX_PROMPT_BYTES} bytes`);
    }
    return {
      id: unit.id,
      prompt,
      mode: unit.mode ?? null,
      addDirs: (unit.add_dirs ?? []).map((dir) => resolve(base, dir)),
      clone: unit.clone === undefined ? null : resolve(base, unit.clone),
      model: unit.model ?? null,
      dependsOn: unit.depends_on ?? [],
      timeoutSeconds: unit.timeout ?? null,
    };
  });
  return { plan, units };
}
