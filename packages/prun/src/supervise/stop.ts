// Stopping one running unit from any process (the driver, `prun cancel`): a hosted unit gets a
// stop request its supervisor reads at once (a signal to the supervisor would stop every unit it
// hosts); a unit with a dispatcher process of its own gets the signal, as before supervisors.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchPaths } from '../batch.js';
import type { LedgerEntry } from '../ledger.js';
import { isDispatcherFor } from '../units.js';
import { hostedState, supervisorOf } from './alive.js';
import { supervisorPaths } from './records.js';

export type StoppableSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/**
 * Ask a running unit's dispatcher to stop as `signal` would (the first publishes a FALLBACK
 * naming it; a second kills the worker group at once). True when the request reached a live
 * dispatcher; false when the unit is not running (nothing to stop).
 */
export function stopUnit(paths: BatchPaths, entry: LedgerEntry, signal: StoppableSignal): boolean {
  if (entry.status !== 'running' || entry.dispatcher_pid === undefined) return false;
  const who = supervisorOf(entry);
  if (who !== null) {
    if (hostedState(paths.dir, who, entry.id, entry.attempt ?? 0).kind !== 'running') return false;
    const name = `${entry.id}.${signal}.${randomBytes(8).toString('hex')}`;
    try {
      writeFileSync(join(supervisorPaths(paths.dir, who).stop, name), '', { flag: 'wx' });
      return true;
    } catch {
      return false;
    }
  }
  if (!isDispatcherFor(entry.dispatcher_pid, paths.result(entry.id), entry.dispatcher_start ?? null)) return false;
  try {
    process.kill(entry.dispatcher_pid, signal);
    return true;
  } catch {
    return false;
  }
}
