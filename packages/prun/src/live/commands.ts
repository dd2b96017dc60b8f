// `prun wait`, `prun log` and `prun status --watch`: watching a batch from any terminal. All three
// only read (the ledger, the summary, state directories) and never take the driver lock.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readHead } from '@prun/kit/fs';
import { MONITOR_ENV, readSecondsSetting } from '@prun/monitor';
import { STATE_FILES } from '@prun/unit-state';
import { batchPaths, refuseNonBatchDir, type BatchPaths } from '../paths.js';
import { BatchError, EXIT } from '../errors.js';
import { readLedger, resolveBatchDir, type LedgerEntry } from '../ledger.js';
import { liveLockHolder } from '../lock.js';
import { loadPlan, PlanError } from '../plan.js';
import { batchStatus, renderStatus } from '../status.js';
import { stateDirFromLog } from '../units.js';
import { unitDispatcherAlive } from '../supervise/alive.js';
import type { LivePanel } from './live-panel.js';
import { panelWanted } from './wanted.js';
import { stderrLine } from '../stderr.js';
import { TailRenderer } from './log.js';
import { awaitBatchDir, batchEnd, readSummary, watchBatch, type BatchEnd } from './watch.js';

/** How long `wait`/`status --watch` give a batch directory to appear (`prun batch PLAN --dir D & prun wait D`). */
export const APPEAR_GRACE_MS = 10_000;

/** One read of a tail: bounded, so a huge tail is read in steps. */
const CHUNK_BYTES = 1024 * 1024;

/** The batch at `dir`, waiting briefly for it to appear; its unit ids from its own plan. */
async function openForWatch(dir: string, graceMs: number): Promise<{ paths: BatchPaths; ids: string[] }> {
  // An empty DIR is a usage error here as for every batch command, never the current directory.
  const paths = batchPaths(resolveBatchDir(dir, process.cwd()));
  // A batch directory appears whole (laid out aside, then renamed): only a missing one is worth a wait.
  await awaitBatchDir(paths, existsSync(paths.dir) ? 0 : graceMs);
  refuseNonBatchDir(paths.dir);
  try {
    return { paths, ids: loadPlan(paths.plan).units.map((unit) => unit.id) };
  } catch (error) {
    if (error instanceof PlanError) throw new BatchError(`${paths.plan}: ${error.message}`, EXIT.usage);
    throw error;
  }
}

interface Look {
  latest: Map<string, LedgerEntry>;
  driverPid: number | null;
  end: BatchEnd;
}

/**
 * A watcher's looks at a batch, for `prun wait` and `prun status --watch` alike: each one judged
 * by batchEnd, remembering since when the batch has had neither a driver nor a running dispatch.
 */
function batchLooker(paths: BatchPaths, ids: readonly string[]): () => Look {
  let unattendedSinceMs: number | null = null;
  return () => {
    const { latest } = readLedger(paths.ledger);
    const driverPid = liveLockHolder(paths.lock);
    const dispatchAlive = driverPid === null && ids.some((id) => {
      const entry = latest.get(id);
      return entry !== undefined && unitDispatcherAlive(paths, entry);
    });
    const nowMs = Date.now();
    if (driverPid !== null || dispatchAlive) unattendedSinceMs = null;
    else unattendedSinceMs ??= nowMs;
    const end = batchEnd({
      driverPid,
      summary: readSummary(paths),
      statuses: ids.map((id) => latest.get(id)?.status ?? 'unknown'),
      dispatchAlive,
      unattendedMs: unattendedSinceMs === null ? 0 : nowMs - unattendedSinceMs,
    });
    return { latest, driverPid, end };
  };
}

/** The refusal of a batch nobody drives and that has not finished. */
function abandoned(paths: BatchPaths): BatchError {
  return new BatchError(
    `${paths.dir} is not finished and no prun drives it (its driver was killed or crashed); prun batch --resume ${paths.dir} finishes it`,
    EXIT.abandoned,
  );
}

/** `prun wait DIR [--json]`: until the batch ends, then its exit code. */
export async function runWait(dirArg: string, json: boolean, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { paths, ids } = await openForWatch(dirArg, APPEAR_GRACE_MS);
  const lookAt = batchLooker(paths, ids);
  let last: Look | null = null;
  await watchBatch(paths, () => {
    last = lookAt();
    return last.end.kind !== 'running';
  });
  const end = (last as Look | null)?.end ?? { kind: 'abandoned' };
  if (end.kind === 'abandoned') throw abandoned(paths);
  if (end.kind !== 'finished') throw new Error('wait ended while the batch runs');
  if (json) {
    const document = end.summary === null ? { dir: paths.dir, exit_code: end.exitCode, stopped_by: null, units: batchStatus(paths.dir).units } : end.summary.document;
    out.write(`${JSON.stringify(document)}\n`);
  } else {
    const status = batchStatus(paths.dir);
    out.write(renderStatus(status.units, status.endedUnwatched, status.notStarted));
  }
  return end.exitCode;
}

/** `prun status DIR --watch`: the live panel until the batch ends, then the status table. */
export async function runStatusWatch(dirArg: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { paths, ids } = await openForWatch(dirArg, APPEAR_GRACE_MS);
  const lookAt = batchLooker(paths, ids);
  let look = lookAt();
  let panel: LivePanel | null = null;
  if (panelWanted(env) && look.end.kind === 'running') {
    const [stallName, stallDefault] = MONITOR_ENV.stallThresholdS;
    // Loaded only for a person's terminal, as `prun batch` does (its terminal code and libraries).
    const { LivePanel } = await import('./live-panel.js');
    panel = await LivePanel.open(
      {
        dir: dirArg,
        batchDir: paths.dir,
        env,
        stallSeconds: readSecondsSetting(env, stallName, stallDefault),
        startedAtMs: driverStartMs(look.latest),
        jobs: null,
      },
      () => ({ ids, latest: look.latest, stalled: null }),
    );
  }
  try {
    await watchBatch(paths, () => {
      look = lookAt();
      panel?.draw();
      return look.end.kind !== 'running';
    });
  } finally {
    panel?.close();
  }
  const status = batchStatus(paths.dir);
  for (const warning of status.warnings) stderrLine(warning);
  process.stdout.write(renderStatus(status.units, status.endedUnwatched, status.notStarted));
  // A driver killed with units unsettled is no end: say so as `prun wait` does, never exit 0.
  if (look.end.kind === 'abandoned') throw abandoned(paths);
  return EXIT.ok;
}

/** A watcher does not know when the driver started: the first start of a unit still in its ledger stands in. */
function driverStartMs(latest: ReadonlyMap<string, LedgerEntry>): number {
  const starts = [...latest.values()].map((entry) => (entry.started_at === null ? NaN : Date.parse(entry.started_at))).filter((ms) => !Number.isNaN(ms));
  return starts.length === 0 ? Date.now() : Math.min(...starts);
}

/** The state directory of a unit's current attempt: the ledger's, else the STATE-DIR line its dispatcher printed. */
function unitStateDir(paths: BatchPaths, entry: LedgerEntry | undefined, id: string): string | null {
  return entry?.state_dir ?? stateDirFromLog(paths.stdoutLog(id));
}

/** Whether a unit's output can still grow: it is queued or running, and its driver or its dispatcher is alive. */
function mayGrow(paths: BatchPaths, entry: LedgerEntry | undefined, driverPid: number | null): boolean {
  if (entry === undefined) return driverPid !== null;
  if (entry.status !== 'running' && entry.status !== 'queued') return false;
  if (driverPid !== null) return true;
  return unitDispatcherAlive(paths, entry);
}

export interface LogOptions {
  follow: boolean;
  raw: boolean;
}

/** `prun log DIR UNIT [--follow] [--raw]`: the unit's worker output, rendered or as it is. */
export async function runLog(dirArg: string, id: string, options: LogOptions, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { paths, ids } = await openForWatch(dirArg, 0);
  if (!ids.includes(id)) throw new BatchError(`no unit ${id} in ${paths.plan}`, EXIT.usage);
  const renderer = new TailRenderer();
  let stateDir: string | null = null;
  let offset = 0;
  const emit = (bytes: Uint8Array): void => {
    if (options.raw) out.write(bytes);
    else for (const line of renderer.push(bytes)) out.write(`${line}\n`);
  };
  /** Everything the tail holds past what was printed. */
  const drain = (): void => {
    if (stateDir === null) return;
    for (;;) {
      const head = readHead(join(stateDir, STATE_FILES.tail), { maxBytes: CHUNK_BYTES, offset });
      if (!head.ok || head.bytes.length === 0) return;
      offset += head.bytes.length;
      emit(head.bytes);
      if (!head.truncated) return;
    }
  };
  const look = (): boolean => {
    const { latest } = readLedger(paths.ledger);
    const entry = latest.get(id);
    const current = unitStateDir(paths, entry, id);
    if (current !== stateDir) {
      // A new attempt writes a new tail: finish the old one, then start on the new one from its first byte.
      drain();
      if (!options.raw) for (const line of renderer.flush()) out.write(`${line}\n`);
      if (stateDir !== null && current !== null && !options.raw) out.write(`-- attempt ${entry?.attempt ?? '?'}: ${current}\n`);
      stateDir = current;
      offset = 0;
    }
    drain();
    return !options.follow || !mayGrow(paths, entry, liveLockHolder(paths.lock));
  };
  if (!options.follow && unitStateDir(paths, readLedger(paths.ledger).latest.get(id), id) === null) {
    stderrLine(`unit ${id} has no output yet (${readLedger(paths.ledger).latest.get(id)?.status ?? 'not started'})`);
    return EXIT.ok;
  }
  await watchBatch(paths, look, { files: () => (stateDir === null ? [paths.stdoutLog(id)] : [join(stateDir, STATE_FILES.tail), paths.stdoutLog(id)]), pollMs: 1000 });
  // The unit has settled: what its tail still holds, then a partial last line.
  drain();
  if (!options.raw) for (const line of renderer.flush()) out.write(`${line}\n`);
  return EXIT.ok;
}
