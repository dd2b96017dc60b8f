// Signals: which ones stop a run, and no debugger door.
//
// On SIGUSR1 Node starts its inspector on 127.0.0.1:9229, and anything that can connect to it
// runs code inside the process. A runner holds the caller's whole environment and runs beside an
// agent that can send it signals, so no prun-job process may open that door.

/** The signals that stop a run (and, in a foreground `run`, close the caller pipe). */
export const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT'];

let closed = false;

/**
 * Keep SIGUSR1 from starting the inspector for the rest of this process's life. A listener of our
 * own replaces Node's handler; it stays installed, since removing it would restore the default
 * action of SIGUSR1, which ends the process.
 */
export function closeDebuggerDoor(): void {
  if (closed) return;
  closed = true;
  process.on('SIGUSR1', () => undefined);
}

/**
 * Node options for a runner process: where this Node has `--disable-sigusr1` (22.14 and later),
 * the door is shut from the first instruction, before any listener could be installed.
 */
export function runnerNodeOptions(): string[] {
  return process.allowedNodeEnvironmentFlags.has('--disable-sigusr1') ? ['--disable-sigusr1'] : [];
}
