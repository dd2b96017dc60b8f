import { closeDebuggerDoor, packageVersion } from '@prun/kit/cli';
import { HELP } from './help.js';
import { dispatch } from './run.js';

const MANIFEST = new URL('../package.json', import.meta.url);

/**
 * The bin's command, run by @prun/kit/cli's runBin (the one top-level catch, the SIGUSR1
 * debugger door, the EPIPE policy) from the shim or from `prun dispatch`. It sets the exit
 * code and never ends the process itself: the shim passes runBin `exitWhenDone` (and this
 * module says so in `exitWhenDone` below), because leaving by the end of the event loop would
 * close the signal handlers during Node's teardown and give a signal arriving then its default
 * action (death by 128+n after the result is published).
 */
export async function main(argv: string[]): Promise<void> {
  // Also when main is called without runBin (tools/main-as-nobody.mjs): SIGUSR1 would open an
  // inspector in the process that holds the unscrubbed environment. Idempotent.
  closeDebuggerDoor();
  // Set, not only returned: `prun dispatch` hosts this main and reads process.exitCode.
  process.exitCode = await dispatch(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    help: () => HELP,
    version: () => packageVersion(MANIFEST),
    holdSignalsUntilExit: true,
  });
}

/** Read by runBin (kit): the process must end as soon as main resolves; see main above. */
export const exitWhenDone = true;
