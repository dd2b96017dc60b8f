import { busyRefusalDir, busyRefusalReason, isBusyRefusal } from '@prun/dispatcher-agy';
import { QUOTA_EXHAUSTED_EXIT } from '@prun/quota';
import type { ResultSummary } from '@prun/unit-state';
import { fallbackReason, isQuotaBlock } from './units.js';

/** A result file as it is when a dispatch ends: absent (or empty), present but not a result, or parsed. */
export type ResultRead = ResultSummary | 'unparsed' | null;

/** Everything known about a dispatch that has ended. */
export interface DispatchEnd {
  unitId: string;
  /** The dispatcher's exit code; null when it ended while no batch process watched it. */
  exitCode: number | null;
  result: ResultRead;
  /** The signal the batch passed on to this dispatcher to stop it, if it did. */
  stopSignal: string | null;
  /** The last line of the dispatcher's stderr, for the note when it left no result. */
  stderrLast: string | null;
  /** `prun cancel` asked to stop this unit (the ledger's `stop_reason` was `cancel`). */
  cancelled?: boolean;
  /** The `--halt` rule that stopped this unit (`--halt now,fail=1`), when the ledger's `stop_reason` was `halt`. */
  haltedBy?: string | null;
  /** Automatic retries (`--retries`) this unit has left; a failed or invalid end with some left is retried. */
  retriesLeft?: number;
  /**
   * The batch's supervisor died while hosting this dispatch (`supervisorDeathText`): that, not
   * the unit's last log line, is why it ended.
   */
  hostDeath?: string | null;
}

/** How a batch's supervisor ended, for the notes and the message of the units it took with it. */
export function supervisorDeathText(death: { pid: number; signal: string | null; code: number | null }): string {
  const how = death.signal !== null ? `died of ${death.signal}` : `exited with code ${death.code ?? 'unknown'}`;
  return `the batch's supervisor (pid ${death.pid}) ${how}`;
}

export type UnitOutcome =
  | { status: 'done' }
  /** `retry` (present only when true): run it again now as a follow-up turn (`--retries` left). */
  | { status: 'invalid'; note: string; retry?: true }
  | { status: 'failed'; note: string; retry?: true }
  /** Stopped by `prun cancel` before it was done; the note says how it ended. */
  | { status: 'cancelled'; note: string }
  /**
   * A temporary refusal (exit 75): `quota` (the note is the block text, which may name the
   * reset) or `busy` (the dispatcher found an earlier worker still holding the unit's working
   * directory; try again shortly).
   */
  | { status: 'deferred'; note: string; refusal: 'quota' | 'busy' }
  | { status: 'interrupted'; note: string }
  /** The dispatch left nothing at all (it never got going): dispatch the unit again. */
  | { status: 'queued'; note: string };

/** The return contract's four lines, in order, as they appear in a result. */
const CONTRACT_FIELDS = [
  ['conclusion', 'Conclusion:'],
  ['files', 'Files:'],
  ['openItems', 'Open items:'],
  ['verification', 'Verification:'],
] as const;

/** What a non-FALLBACK result lacks of the return contract, or null when it follows it. */
export function contractProblem(unitId: string, result: ResultRead): string | null {
  if (result === null) return 'no result';
  if (result === 'unparsed') return `its first line is not the header "# ${unitId} result"`;
  if (result.unitId !== unitId) return `its header names unit ${result.unitId}, not ${unitId}`;
  const missing = CONTRACT_FIELDS.filter(([key]) => result[key] === null).map(([, label]) => label);
  return missing.length === 0 ? null : `it lacks ${missing.join(', ')}`;
}

/** What a dispatch's end means before the controls (cancel, retries) are applied. */
type EndOutcome =
  | { status: 'done' }
  | { status: 'invalid' | 'failed' | 'interrupted' | 'queued'; note: string }
  | { status: 'deferred'; note: string; refusal: 'quota' | 'busy' };

/**
 * A unit's outcome from its dispatcher's end: the one decision the live path (a child's exit) and
 * the restart path (a dispatcher that ended while no batch watched, exit code unknown) share.
 * Pure: the caller reads the result file and the log, and records what this returns.
 * A unit `prun cancel` stopped is `cancelled` however it ended, unless it was done first; one
 * `--halt now` stopped has a note naming the halt; a failed or invalid unit with automatic
 * retries left is marked for a retry.
 */
export function unitOutcome(end: DispatchEnd): UnitOutcome {
  const outcome = endOutcome(end);
  if (end.cancelled === true && outcome.status !== 'done') {
    return { status: 'cancelled', note: `cancelled by prun cancel${outcome.status === 'queued' ? '' : `: ${outcome.note}`}` };
  }
  // A unit the halt stopped says so, as a cancelled one names the cancel.
  if (outcome.status === 'interrupted' && end.haltedBy) return { status: 'interrupted', note: `stopped by ${end.haltedBy}: ${outcome.note}` };
  if ((outcome.status === 'failed' || outcome.status === 'invalid') && (end.retriesLeft ?? 0) > 0) return { ...outcome, status: outcome.status, retry: true };
  return outcome as UnitOutcome;
}

function endOutcome(end: DispatchEnd): EndOutcome {
  // What a unit published before its supervisor died decides, as for a dispatch that ended
  // unwatched: the exit code is the supervisor's, not the dispatch's.
  if (end.hostDeath && end.result !== null) return endOutcome({ ...end, exitCode: null, hostDeath: null });
  const { exitCode, result, stopSignal } = end;
  const quotaExit = exitCode === QUOTA_EXHAUSTED_EXIT;
  if (result === null) {
    if (quotaExit) {
      // Both refusals publish a FALLBACK; without one, the dispatcher's last stderr line tells them apart.
      const busyDir = busyRefusalDir(end.stderrLast ?? '');
      if (busyDir !== null) return { status: 'deferred', note: busyRefusalReason(busyDir), refusal: 'busy' };
      return { status: 'deferred', note: 'quota refused', refusal: 'quota' };
    }
    if (stopSignal !== null) return { status: 'interrupted', note: `stopped by ${stopSignal} before it published a result` };
    if (end.hostDeath) return { status: 'failed', note: `${end.hostDeath} before this unit published a result` };
    if (exitCode === null) return { status: 'queued', note: 'previous dispatch ended without a result; dispatching again' };
    const why = end.stderrLast === null ? '' : `: ${end.stderrLast}`;
    return { status: 'failed', note: `dispatcher exited with code ${exitCode} and published no result${why}` };
  }
  if (result !== 'unparsed' && result.fallback) {
    const reason = fallbackReason(result);
    if (isQuotaBlock(reason)) return { status: 'deferred', note: reason, refusal: 'quota' };
    // The dispatcher's other temporary refusal (an earlier worker still holds the unit's working
    // directory), told by its text, so a FALLBACK settled after a restart (exit code unknown)
    // gets the same outcome as the exit seen live. An exit 75 with any other reason is a failure.
    if (isBusyRefusal(reason)) return { status: 'deferred', note: reason, refusal: 'busy' };
    if (stopSignal !== null && exitCode !== 0) return { status: 'interrupted', note: reason };
    return { status: 'failed', note: reason };
  }
  if (exitCode !== null && exitCode !== 0) {
    const note = `dispatcher exited with code ${exitCode}`;
    return stopSignal !== null ? { status: 'interrupted', note: `${note} after ${stopSignal}` } : { status: 'failed', note };
  }
  const problem = contractProblem(end.unitId, result);
  if (problem !== null) return { status: 'invalid', note: `result does not follow the return contract: ${problem}` };
  return { status: 'done' };
}

/** Statuses that count in the exit code like failures, and block their dependents. */
export const FAILED_STATUSES = ['failed', 'invalid'] as const;
/** Failed or invalid: what `--retry-failed` and `--retries` run again. */
export const isFailedStatus = (status: string | undefined): boolean => status === 'failed' || status === 'invalid';
/** A unit its dependents can never follow: failed, invalid, or cancelled. */
export const blocksDependents = (status: string | undefined): boolean => isFailedStatus(status) || status === 'cancelled';
/** Units a finished batch counts in its exit code: every unit that is not done for good. */
export const countsAgainstBatch = blocksDependents;
