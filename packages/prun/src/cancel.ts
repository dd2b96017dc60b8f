// `prun cancel DIR UNIT...`: stop or withdraw units of a batch, whether its driver is alive or
// not. The request goes to the batch as a file per unit (cancel-requests.ts); a live driver acts
// on it within a turn of its loop. When no driver holds the batch, this command takes the driver
// lock itself and acts on the requests the same way (BatchRun.cancel), starting nothing, so that
// `--resume` never runs a cancelled unit.
import { closeSync } from 'node:fs';
import { notABatchDirectory } from '@prun/unit-state/ledger';
import { BatchRun, batchPaths } from './batch.js';
import { writeCancelRequest } from './cancel-requests.js';
import { BatchError, EXIT } from './errors.js';
import { refuseNonBatchDir } from './paths.js';
import { readLedger, resolveBatchDir, type LedgerEntry } from './ledger.js';
import { liveLockHolder } from './lock.js';
import { openBatch, refuseDamagedLedger } from './open.js';
import { loadPlan, PlanError } from './plan.js';
import { SETTLED_STATUSES } from './clean.js';

/** Statuses a cancel leaves alone: the unit has already settled for good (the ones `prun clean` takes as settled). */
const FINAL = new Set<string>(SETTLED_STATUSES);

/** How long `prun cancel` waits for a live driver to record a stopped unit's end. */
const DRIVER_WAIT_MS = 60_000;

export interface CancelReport {
  id: string;
  /** `cancelled`; `already`: it had settled before (left as it was); `pending`: the driver has not recorded it yet. */
  outcome: 'cancelled' | 'already' | 'pending';
  status: string;
  note: string | null;
}

export interface CancelOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  message: (line: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** The plan's unit ids, refusing (exit 2, nothing changed) a directory that is not a batch or an id it lacks. */
function checkIds(dir: string, ids: string[]): string[] {
  const paths = batchPaths(dir);
  refuseNonBatchDir(paths.dir);
  let known: string[];
  try {
    known = loadPlan(paths.plan).units.map((unit) => unit.id);
  } catch (error) {
    if (error instanceof PlanError) throw new BatchError(notABatchDirectory(paths.dir, error.message), EXIT.usage);
    throw error;
  }
  const unknown = [...new Set(ids)].filter((id) => !known.includes(id));
  if (unknown.length > 0) {
    throw new BatchError(`${paths.dir} has no unit ${unknown.join(', ')}; nothing was cancelled (its units: ${known.join(', ')})`, EXIT.usage);
  }
  return [...new Set(ids)];
}

/**
 * Take the batch's driver lock if no driver holds it (false when one does) and act on the
 * requests as a driver that starts nothing. The batch is checked as `--resume` checks it (a
 * damaged ledger, a moved directory) before `request` leaves anything in it.
 */
async function actWithoutDriver(dir: string, options: CancelOptions, request: () => void): Promise<boolean> {
  let opened;
  try {
    opened = await openBatch(dir, options.env, options.cwd, { preflight: false });
  } catch (error) {
    if (error instanceof BatchError && error.exitCode === EXIT.busy) return false;
    throw error;
  }
  try {
    request();
    const run = new BatchRun(opened.paths, opened.units, opened.ledger, {
      jobs: 1,
      quotaWait: true,
      quotaWaitMs: 0,
      stallSeconds: Number.MAX_SAFE_INTEGER,
      env: options.env,
      progress: () => undefined,
      message: options.message,
      startUnits: false,
    });
    // Its loop acts on the cancel requests, waits for the stopped dispatchers to end, records
    // them, and fails their dependents; it starts nothing.
    await run.run();
  } finally {
    closeSync(opened.lockFd);
  }
  return true;
}

export async function cancelUnits(dirArg: string, idsArg: string[], options: CancelOptions): Promise<CancelReport[]> {
  const dir = resolveBatchDir(dirArg, options.cwd);
  const ids = checkIds(dir, idsArg);
  const paths = batchPaths(dir);
  const read = readLedger(paths.ledger);
  // Even a unit that looks settled: a damaged ledger's last word on it cannot be trusted.
  refuseDamagedLedger(paths, read);
  const before = read.latest;
  const wanted = ids.filter((id) => !FINAL.has(before.get(id)?.status ?? 'queued'));
  const by = `prun cancel (pid ${process.pid})`;
  let requested = false;
  const request = (): void => {
    if (requested) return;
    requested = true;
    for (const id of wanted) writeCancelRequest(paths.dir, id, by);
  };

  const settledAll = (latest: Map<string, LedgerEntry>): boolean => wanted.every((id) => FINAL.has(latest.get(id)?.status ?? ''));
  if (wanted.length > 0) {
    const deadline = Date.now() + DRIVER_WAIT_MS;
    for (;;) {
      // No driver (or one that just ended): act ourselves. A live one acts on the requests.
      if (liveLockHolder(paths.lock) === null && (await actWithoutDriver(paths.dir, options, request))) break;
      request();
      if (settledAll(readLedger(paths.ledger).latest) || Date.now() > deadline) break;
      await sleep(100);
    }
  }
  const after = readLedger(paths.ledger).latest;
  return ids.map((id): CancelReport => {
    const entry = after.get(id);
    const status = entry?.status ?? 'queued';
    const note = entry?.note ?? null;
    if (!wanted.includes(id)) return { id, outcome: 'already', status: before.get(id)?.status ?? status, note };
    if (status === 'cancelled') return { id, outcome: 'cancelled', status, note };
    return { id, outcome: FINAL.has(status) ? 'already' : 'pending', status, note };
  });
}

export function renderCancel(reports: CancelReport[], driverPid: number | null): string {
  return reports
    .map((report) => {
      if (report.outcome === 'cancelled') return `cancelled ${report.id}${report.note ? `: ${report.note}` : ''}`;
      if (report.outcome === 'already') return `not cancelled ${report.id}: it had already settled (${report.status})`;
      return `requested ${report.id}: ${driverPid === null ? 'the batch' : `prun pid ${driverPid}`} has not recorded it yet (${report.status})`;
    })
    .map((line) => `${line}\n`)
    .join('');
}
