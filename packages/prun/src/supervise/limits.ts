// How many units one supervisor can run at once within the open-file limit. The supervisor holds
// every running unit's descriptors in one process (its two logs, the worker's pipes and status
// socket, a preflight's or refresh's pipes for a moment), where a dispatcher per unit had a
// table of its own each; so `--jobs N` is checked against the limit before anything is spent.
import { readFileSync } from 'node:fs';
import { BatchError, EXIT } from '../errors.js';

/** Measured 7 per running unit (fake agy, `--jobs 10` and `20`), plus two pipes each for its two preflight calls, which may run at once. */
export const FILES_PER_RUNNING_UNIT = 12;
/** What a supervisor holds whatever it runs (Node's own, its driver's socket, its log, a watcher, the spare chain's four pipes, the chain forker's events socket and its request and reply pipes): about 28. */
export const SUPERVISOR_BASE_FILES = 32;

/**
 * The hard open-file limit this process passes on (`ulimit -Hn`), from `/proc/self/limits`; null
 * when unlimited or unknown (not Linux). Node raises its soft limit to the hard one at start, so
 * the hard limit is what the supervisor gets.
 */
export function hardOpenFilesLimit(limitsText: string | null = readLimits()): number | null {
  const match = limitsText === null ? null : /^Max open files\s+\S+\s+(\S+)/m.exec(limitsText);
  if (match === null || match[1] === 'unlimited') return null;
  const limit = Number(match[1]);
  return Number.isSafeInteger(limit) ? limit : null;
}

function readLimits(): string | null {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return null;
  }
}

/**
 * Why `jobs` cannot run at once under `limit` (units beyond the plan's count never run), or null.
 * When the plan has more units than `jobs`, one more counts: the unit handed over ahead (README,
 * "Supervision") starts as soon as a worker exits, while the unit before it still holds its
 * logs and its launch chain's pipes (measured: the supervisor's peak went from 39 to 46 open
 * files at `--jobs 1`).
 */
export function openFilesProblem(jobs: number, unitCount: number, limit: number | null): string | null {
  const running = Math.min(jobs, unitCount);
  const ahead = unitCount > jobs ? 1 : 0;
  const needed = SUPERVISOR_BASE_FILES + FILES_PER_RUNNING_UNIT * (running + ahead);
  if (limit === null || needed <= limit) return null;
  // The advice holds for a plan larger than it, so with the unit ahead.
  const fit = Math.floor((limit - SUPERVISOR_BASE_FILES) / FILES_PER_RUNNING_UNIT) - 1;
  const advice = fit >= 1 ? `use --jobs ${fit} or fewer, or raise the limit` : 'raise the limit';
  const units = ahead === 0 ? `${running} units running at once` : `${running} units running at once and the one handed over ahead`;
  return `--jobs ${jobs}: ${units} need about ${needed} open files in the batch's supervisor, but this process may open only ${limit} (ulimit -n); ${advice}`;
}

/** Refuse (exit 2, one line) a `--jobs` the open-file limit cannot hold, before any unit starts. */
export function refuseJobsBeyondOpenFiles(jobs: number, unitCount: number): void {
  const problem = openFilesProblem(jobs, unitCount, hardOpenFilesLimit());
  if (problem !== null) throw new BatchError(problem, EXIT.usage);
}
