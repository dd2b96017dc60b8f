import { join } from 'node:path';
import { statRegularFile } from '@prun/monitor';
import { STATE_FILES } from '@prun/unit-state';
import { batchPaths, refuseNonBatchDir } from './paths.js';
import { BatchError, EXIT } from './errors.js';
import { readLedger, type LedgerEntry } from './ledger.js';
import { liveLockHolder } from './lock.js';
import { loadPlan, PlanError } from './plan.js';
import { entryHostedState, unitDispatcherAlive } from './supervise/alive.js';
import { fallbackReason, readResultHead } from './units.js';

export interface UnitStatusRow {
  id: string;
  status: LedgerEntry['status'] | 'unknown';
  exit_code: number | null;
  /** The result file's state: present, fallback, or missing. */
  result: 'present' | 'fallback' | 'missing';
  /** For a FALLBACK, its reason. */
  reason: string | null;
  /** Whether the unit's dispatcher is still running (a batch process may have died). */
  dispatcher_alive: boolean;
  tail_bytes: number | null;
  result_file: string | null;
  state_dir: string | null;
  note: string | null;
  /** The model that ran, when the unit's dispatcher named it. */
  model: string | null;
  quota_fallback: boolean;
}

export interface BatchStatus {
  units: UnitStatusRow[];
  /** The pid of the prun process driving the batch right now, if any. */
  driverPid: number | null;
  /** Ledger problems a driver would stop on or repair, one line each. */
  warnings: string[];
  /**
   * Units still `running` in the ledger whose dispatch has ended in their supervisor while no
   * driver watched, with its exit code: the next `prun batch --resume` settles them.
   */
  endedUnwatched: Map<string, number>;
  /** Units handed to a live supervisor that has not started them yet (no worker slot free). */
  notStarted: Set<string>;
}

/**
 * A batch's units from its ledger, checked against the state directories and result files.
 * Read-only and lock-free, so it works while a driver runs.
 */
export function batchStatus(dir: string): BatchStatus {
  const paths = batchPaths(dir);
  refuseNonBatchDir(paths.dir);
  let ids: string[];
  try {
    ids = loadPlan(paths.plan).units.map((unit) => unit.id);
  } catch (error) {
    if (error instanceof PlanError) throw new BatchError(`${paths.plan}: ${error.message}`, EXIT.usage);
    throw error;
  }
  const ledger = readLedger(paths.ledger);
  const { latest } = ledger;
  const warnings: string[] = [];
  if (!ledger.exists) warnings.push(`the ledger ${paths.ledger} is missing`);
  if (ledger.badLines.length > 0) warnings.push(`ledger lines ${ledger.badLines.join(', ')} of ${paths.ledger} are not valid entries`);
  if (ledger.tornTail) warnings.push(`the ledger's last line (${ledger.tornTail.line}) is torn; the next driver sets it aside`);
  const endedUnwatched = new Map<string, number>();
  const notStarted = new Set<string>();
  const units = ids.map((id): UnitStatusRow => {
    const entry = latest.get(id);
    const hosted = entry?.status === 'running' ? entryHostedState(paths.dir, entry) : null;
    if (hosted?.kind === 'ended') endedUnwatched.set(id, hosted.exitCode);
    if (hosted?.kind === 'running' && !hosted.started) notStarted.add(id);
    const head = readResultHead(paths.result(id));
    const summary = head === 'unparsed' ? null : head;
    const fallback = summary?.fallback === true;
    return {
      id,
      status: entry?.status ?? 'unknown',
      exit_code: entry?.exit_code ?? null,
      result: head === null ? 'missing' : fallback ? 'fallback' : 'present',
      reason: summary && fallback ? fallbackReason(summary) : null,
      dispatcher_alive: hosted !== null ? hosted.kind === 'running' : entry !== undefined && unitDispatcherAlive(paths, entry),
      tail_bytes: entry?.state_dir ? (statRegularFile(join(entry.state_dir, STATE_FILES.tail))?.size ?? 0) : null,
      result_file: entry?.result_file ?? paths.result(id),
      state_dir: entry?.state_dir ?? null,
      note: entry?.note ?? null,
      model: entry?.model ?? null,
      quota_fallback: entry?.quota_fallback === true,
    };
  });
  return { units, driverPid: liveLockHolder(paths.lock), warnings, endedUnwatched, notStarted };
}

/** The status detail of a unit handed to its supervisor and not started there yet. */
export const NOT_STARTED_DETAIL = 'handed over; starts when a worker slot frees';

/** Plain columns, padded; the last column is free text. */
export function renderTable(header: string[], rows: string[][]): string {
  const widths = header.slice(0, -1).map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]): string =>
    [...row.slice(0, -1).map((cell, i) => cell.padEnd(widths[i]!)), row.at(-1) ?? ''].join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/**
 * The status table. A `running` unit nothing runs any more is `running(ended)` when its dispatch
 * ended in its supervisor while no driver watched (the detail gives its exit code: `--resume`
 * settles it), and `running(dispatcher gone)` otherwise (it died, or was never handed over). One
 * handed to its supervisor and not started there yet says so in its detail.
 */
export function renderStatus(
  rows: UnitStatusRow[],
  endedUnwatched: ReadonlyMap<string, number> = new Map(),
  notStarted: ReadonlySet<string> = new Set(),
): string {
  return renderTable(
    ['UNIT', 'STATUS', 'EXIT', 'RESULT', 'DETAIL'],
    rows.map((row) => {
      const ended = row.status === 'running' ? endedUnwatched.get(row.id) : undefined;
      const gone = row.status === 'running' && !row.dispatcher_alive;
      return [
        row.id,
        row.status + (ended !== undefined ? '(ended)' : gone ? '(dispatcher gone)' : ''),
        row.exit_code === null ? '-' : String(row.exit_code),
        row.result,
        ended !== undefined
          ? `ended (exit ${ended}) while no driver watched; prun batch --resume settles it`
          : notStarted.has(row.id)
            ? NOT_STARTED_DETAIL
            : (row.reason ?? row.note ?? ''),
      ];
    }),
  );
}
