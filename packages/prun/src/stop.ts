// "Stop this running unit": the one way prun stops a unit's dispatch, whoever asks (a signal the
// batch got, `--halt now`, `prun cancel`). The dispatcher's normal signal path does the rest: it
// forwards the signal to its worker group, publishes a FALLBACK naming the signal, and exits.
// Kept in a module of its own so that how running units are supervised can change behind it.

/** A running unit's dispatch as the batch knows it. */
export interface RunningDispatch {
  id: string;
  /** The dispatcher's pid (the batch's child, or one adopted after a restart). */
  pid: number;
}

/**
 * Pass `signal` to a running unit's dispatcher. Returns false when it is already gone. A
 * repeated signal is passed on again (the dispatcher then kills its worker group at once).
 */
export function stopRunningUnit(unit: RunningDispatch, signal: NodeJS.Signals): boolean {
  try {
    process.kill(unit.pid, signal);
    return true;
  } catch {
    return false;
  }
}
