// `prun batch PLAN --dry-run [--json]`: every check a real run makes before it starts a worker
// (checkNewBatch), then the schedule it would follow, and nothing else: no batch directory, no
// dispatcher, no agy process, no quota refresh. The decisions are pure functions over the plan,
// the environment and the quota snapshot as it is on disk now.
import { parseLaunchSettings, parsePreflightSettings } from '@prun/dispatcher-agy';
import { allowResolution, DEFAULT_MODEL, modelPool } from '@prun/model-resolve';
import { QUOTA_CACHE_MAX_AGE_SECONDS, fileAgeSeconds, formatPercent, gateEnabled, readJsonFile, readPoolStates, route, snapshotLocation, type PoolStates } from '@prun/quota';
import { batchPaths, unitEnv, unitMode } from './batch.js';
import type { ResolvedUnit } from './plan.js';
import { dependencyWaves } from './schedule.js';
import { renderTable } from './status.js';

/** What the quota gate would decide for a unit's group if it were dispatched now. */
export interface QuotaDecision {
  /**
   * `run`: its group has room; `balance`/`fallback`: routing moves it to the other group;
   * `deferred`: refused until the reset the block names (the batch waits, or stops under
   * --no-quota-wait); `ungated`: the gate is off, the model is in no metered group, or there is
   * no readable snapshot of the caller's own (`AGY_QUOTA_CACHE`: the dispatcher then runs it
   * ungated); `unknown`: no managed snapshot yet, so each dispatch fetches one first and decides then.
   */
  decision: 'run' | 'balance' | 'fallback' | 'deferred' | 'ungated' | 'unknown';
  /** `gemini` or `second` (Claude and GPT), after routing; null when not metered. */
  group: string | null;
  /** The group's remaining fraction as the snapshot reports it, when it does. */
  remaining: number | null;
  /** One line: the block text, the routing note, or why it is ungated. */
  detail: string;
}

export interface DryRunUnit {
  id: string;
  wave: number;
  depends_on: string[];
  /** The dispatcher's mode: the plan's, accept-edits in a clone, else the dispatcher's default in its own scratch dir. */
  mode: 'plan' | 'accept-edits';
  workspace: { kind: 'scratch' | 'clone'; path: string | null; source: string | null };
  /** The model after the batch's and the plan's settings and quota routing. */
  model: string;
  /** True when the dispatcher's preflight would float this template model to the newest of its family agy lists. */
  floats: boolean;
  quota: QuotaDecision;
  /**
   * The deadline (seconds) the dispatcher will give the unit, as it reads it: the plan's
   * `timeout`, else ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS, else its default.
   */
  timeout_s: number;
  add_dirs: string[];
}

export interface DryRun {
  /** The batch directory the run would create. */
  dir: string;
  waves: string[][];
  units: DryRunUnit[];
  /** The quota snapshot read, and how old it is; null when there is none to read. */
  snapshot: { path: string; age_s: number | null; stale: boolean } | null;
}

/** The snapshot as read now: its pool states, and whether the dispatcher would fetch a fresh one first. */
export interface SnapshotNow {
  states: PoolStates | null;
  snapshot: DryRun['snapshot'];
  /** A managed snapshot that is missing or stale: each dispatch refreshes it before routing. */
  fetchedAtDispatch: boolean;
}

const GROUP_NAMES: Record<string, string> = { gemini: 'Gemini', second: 'Claude and GPT' };

/** The quota decision for one model, from the snapshot's pool states (null: none readable). */
export function quotaDecision(
  model: string,
  pinned: boolean,
  states: PoolStates | null,
  env: NodeJS.ProcessEnv,
  fetchedAtDispatch = false,
): { model: string; quota: QuotaDecision } {
  if (!gateEnabled(env)) return { model, quota: { decision: 'ungated', group: null, remaining: null, detail: 'quota gate off (PRUN_AGY_QUOTA_GATE)' } };
  const pool = modelPool(model);
  if (pool === null) return { model, quota: { decision: 'ungated', group: null, remaining: null, detail: 'model in no metered group' } };
  if (states === null && fetchedAtDispatch) {
    return { model, quota: { decision: 'unknown', group: pool, remaining: null, detail: 'no quota snapshot yet: each dispatch fetches one and decides then' } };
  }
  if (states === null) return { model, quota: { decision: 'ungated', group: pool, remaining: null, detail: 'no readable quota snapshot: runs ungated' } };
  const routed = route(model, pinned, states, env);
  const group = modelPool(routed.model) ?? pool;
  const remaining = states[group]?.remaining ?? null;
  const left = remaining === null ? `${GROUP_NAMES[group]} not reported` : `${GROUP_NAMES[group]} ${formatPercent(remaining)} left`;
  if (routed.block !== undefined) return { model: routed.model, quota: { decision: 'deferred', group, remaining, detail: routed.block } };
  if (routed.note !== undefined) {
    const decision = routed.note.startsWith('MODEL-BALANCE') ? 'balance' : 'fallback';
    return { model: routed.model, quota: { decision, group, remaining, detail: `${routed.note} (${left})` } };
  }
  return { model: routed.model, quota: { decision: 'run', group, remaining, detail: left } };
}

/** The schedule of a checked plan: pure, given the snapshot's pool states. */
export function planSchedule(units: ResolvedUnit[], target: string, env: NodeJS.ProcessEnv, now: SnapshotNow): DryRun {
  const { states, snapshot } = now;
  const paths = batchPaths(target);
  const waves = dependencyWaves(units);
  const waveOf = new Map(waves.flatMap((ids, index) => ids.map((id) => [id, index + 1] as const)));
  const preflightOn = parsePreflightSettings(env).timeoutSeconds !== null;
  return {
    dir: paths.dir,
    waves,
    snapshot,
    units: units.map((unit): DryRunUnit => {
      const cloneDir = unit.clone === null ? null : paths.clone(unit.id);
      const unitSettings = unitEnv(env, unit, cloneDir);
      // The dispatcher's own reading of its settings (checked already), so the model is its model.
      const settings = parseLaunchSettings(unitSettings, DEFAULT_MODEL);
      const routed = quotaDecision(settings.model, settings.namedModel !== '', states, unitSettings, now.fetchedAtDispatch);
      return {
        id: unit.id,
        wave: waveOf.get(unit.id) ?? 1,
        depends_on: unit.dependsOn,
        mode: unitMode(unit) ?? 'accept-edits',
        workspace: cloneDir === null ? { kind: 'scratch', path: null, source: null } : { kind: 'clone', path: cloneDir, source: unit.clone },
        model: routed.model,
        floats: preflightOn && allowResolution(routed.model, settings.namedModel),
        quota: routed.quota,
        timeout_s: settings.timeoutSeconds,
        add_dirs: unit.addDirs,
      };
    }),
  };
}

/** The quota snapshot as the dispatcher would find it now, read only (never refreshed). */
export async function readSnapshotNow(env: NodeJS.ProcessEnv, now: number): Promise<SnapshotNow> {
  const location = snapshotLocation(env);
  const age = await fileAgeSeconds(location.path, now).catch(() => null);
  if (age === null) return { states: null, snapshot: null, fetchedAtDispatch: location.managed };
  let states: PoolStates | null = null;
  try {
    states = readPoolStates(await readJsonFile(location.path), now);
  } catch {
    states = null;
  }
  // The dispatcher refreshes a managed snapshot older than this before it routes.
  const stale = location.managed && age > QUOTA_CACHE_MAX_AGE_SECONDS;
  return { states, snapshot: { path: location.path, age_s: Math.round(age), stale }, fetchedAtDispatch: stale };
}

export function renderDryRun(run: DryRun, planPath: string): string {
  const rows = run.units.map((unit) => [
    String(unit.wave),
    unit.id,
    unit.mode,
    unit.workspace.kind === 'clone' ? `clone of ${unit.workspace.source}` : 'scratch',
    unit.model + (unit.floats ? ' (newest of its family at dispatch)' : ''),
    `${unit.quota.decision}: ${unit.quota.detail}`,
  ]);
  const snapshot =
    run.snapshot === null
      ? 'quota: no snapshot yet'
      : `quota: snapshot ${run.snapshot.path}, ${run.snapshot.age_s}s old${run.snapshot.stale ? ' (each dispatch refreshes it first; decisions may change)' : ''}`;
  return [
    `dry run of ${planPath}: ${run.units.length} unit(s) in ${run.waves.length} wave(s) for ${run.dir}; nothing was started or created`,
    renderTable(['WAVE', 'UNIT', 'MODE', 'WORKSPACE', 'MODEL', 'QUOTA'], rows).trimEnd(),
    snapshot,
    '',
  ].join('\n');
}
