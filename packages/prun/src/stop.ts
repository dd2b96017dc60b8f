// "Stop this running unit": the one way prun stops a unit's dispatch, whoever asks (a signal the
// batch got, `--halt now`, `prun cancel`). The dispatcher's normal signal path does the rest: it
// forwards the signal to its worker group, publishes a FALLBACK naming the signal, and exits.
// Kept in a module of its own so that how running units are supervised can change behind it.

import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { supervisorPaths } from './supervise/records.js';
import { processStartTime } from './units.js';

/** A running unit's dispatch as the batch knows it. */
export interface RunningDispatch {
  id: string;
  /**
   * The dispatcher's pid: its own process (one adopted after a restart from a prun before
   * supervisors), or the batch's supervisor that hosts it with the batch's other running units.
   */
  pid: number;
  /** Set when the unit runs inside a supervisor: the batch directory, the supervisor's start time, the unit's attempt. */
  hosted?: { batchDir: string; start: string; attempt: number };
}

/**
 * Pass `signal` to a running unit's dispatcher. Returns false when it is already gone. A
 * repeated signal is passed on again (the dispatcher then kills its worker group at once).
 * A hosted unit gets a stop request of its own in its supervisor's `stop/` folder, which the
 * supervisor reads at once and passes to that unit alone (a signal to the supervisor process
 * would reach every unit it hosts).
 */
export function stopRunningUnit(unit: RunningDispatch, signal: NodeJS.Signals): boolean {
  if (unit.hosted !== undefined) {
    const folder = supervisorPaths(unit.hosted.batchDir, { pid: unit.pid, start: unit.hosted.start }).stop;
    // A supervisor started a moment ago may not have made its folder yet (a Ctrl-C right after
    // the unit was handed over): while that very process lives, the request is left for it to
    // read when it starts watching. Only a supervisor that is gone gets no request.
    if (processStartTime(unit.pid) !== unit.hosted.start) return false;
    try {
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, `${unit.id}.${unit.hosted.attempt}.${signal}.${randomBytes(8).toString('hex')}`), '', { flag: 'wx' });
      return true;
    } catch {
      return false;
    }
  }
  try {
    process.kill(unit.pid, signal);
    return true;
  } catch {
    return false;
  }
}
