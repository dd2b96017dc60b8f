// "Is this unit's dispatcher alive?" for every kind of running unit the ledger can describe: a
// unit hosted by one of the batch's supervisor processes (`supervised`), or one run by a
// dispatcher process of its own (what prun did before supervisors, and what a ledger written
// then still names). One answer for resume, `prun status`, `prun clean` and `prun cancel`.
import type { BatchPaths } from '../batch.js';
import type { LedgerEntry } from '../ledger.js';
import { isDispatcherFor, isRunning, processStartTime } from '../units.js';
import { readHostedRecord, supervisorPaths, type SupervisorIdentity } from './records.js';
import { existsSync } from 'node:fs';

/** Where a hosted unit stands, from its supervisor's files and the supervisor's liveness. */
export type HostedState =
  /**
   * Its dispatch runs (`started`), or it was handed over and will start (not `started`: the
   * supervisor, not drained yet, has still to read it, or holds it until a worker slot frees).
   */
  | { kind: 'running'; started: boolean }
  /** Its dispatch ended with this exit code (perhaps while no driver watched). */
  | { kind: 'ended'; exitCode: number }
  /** Nothing runs it: its supervisor died, or never got it (its driver died before handing it over). */
  | { kind: 'gone' };

/** The supervisor a `running` ledger entry names, if it names one. */
export function supervisorOf(entry: LedgerEntry): SupervisorIdentity | null {
  if (entry.supervised !== true || entry.dispatcher_pid === undefined || entry.dispatcher_start === undefined) return null;
  return { pid: entry.dispatcher_pid, start: entry.dispatcher_start };
}

/** Whether that very process (pid and start time) is running. */
export function supervisorAlive(who: SupervisorIdentity): boolean {
  return isRunning(who.pid) && processStartTime(who.pid) === who.start;
}

/** A hosted unit's state for the attempt the ledger records. */
export function hostedState(batchDir: string, who: SupervisorIdentity, id: string, attempt: number): HostedState {
  const paths = supervisorPaths(batchDir, who);
  const record = readHostedRecord(paths.unit(id));
  const mine = record !== null && record.id === id && record.attempt === attempt;
  if (mine && record.state === 'ended' && record.exit_code !== null) return { kind: 'ended', exitCode: record.exit_code };
  if (!supervisorAlive(who)) return { kind: 'gone' };
  if (mine) return { kind: 'running', started: true };
  // No record yet: a request written by a driver that then died is still read by the supervisor
  // before it writes `drained`; after that, no record means it was never handed over.
  return existsSync(paths.drained) ? { kind: 'gone' } : { kind: 'running', started: false };
}

/** The hosted state of the attempt a ledger entry records, or null when no supervisor hosts it. */
export function entryHostedState(batchDir: string, entry: LedgerEntry): HostedState | null {
  const who = supervisorOf(entry);
  return who === null ? null : hostedState(batchDir, who, entry.id, entry.attempt ?? 0);
}

/** Whether a `running` ledger entry's dispatcher (hosted or its own process) is alive. */
export function unitDispatcherAlive(paths: BatchPaths, entry: LedgerEntry): boolean {
  if (entry.status !== 'running' || entry.dispatcher_pid === undefined) return false;
  const hosted = entryHostedState(paths.dir, entry);
  if (hosted !== null) return hosted.kind === 'running';
  return isDispatcherFor(entry.dispatcher_pid, paths.result(entry.id), entry.dispatcher_start ?? null);
}

/**
 * Whether any supervisor named by a unit's ledger lines (any attempt) runs a dispatch of that
 * unit right now: alive, with the unit's record saying `running`. For `prun clean`, which asks
 * about settled units, so a hand-over still pending is not a question here.
 */
export function hostedDispatchAlive(batchDir: string, entries: readonly LedgerEntry[]): boolean {
  const asked = new Set<string>();
  for (const entry of entries) {
    const who = supervisorOf(entry);
    if (who === null || asked.has(`${who.pid}-${who.start}`)) continue;
    asked.add(`${who.pid}-${who.start}`);
    if (readHostedRecord(supervisorPaths(batchDir, who).unit(entry.id))?.state === 'running' && supervisorAlive(who)) return true;
  }
  return false;
}
