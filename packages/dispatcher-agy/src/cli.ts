import { closeDebuggerDoor, formatInternalError, packageVersion } from '@prun/kit/cli';
import { HELP } from './help.js';
import { dispatch } from './run.js';

/** Messages and internal errors carry the original's name: coordinators grep these texts. */
const MESSAGE_NAME = 'dispatch-task-agy';
const MANIFEST = new URL('../package.json', import.meta.url);

/**
 * The bin's command, run by @prun/kit/cli's runBin (which closes the SIGUSR1 debugger door and
 * owns the EPIPE policy) from the shim or from `prun dispatch`. It never returns: see below.
 */
export async function main(argv: string[]): Promise<void> {
  // Also when main is called without runBin (tools/main-as-nobody.mjs): SIGUSR1 would open an
  // inspector in the process that holds the unscrubbed environment. Idempotent.
  closeDebuggerDoor();
  // Last line of defence: an error thrown in an event callback is one line, not a trace.
  process.on('uncaughtException', (error) => {
    process.stderr.write(formatInternalError(MESSAGE_NAME, error));
    process.exit(70);
  });
  const code = await dispatch(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    help: () => HELP,
    version: () => packageVersion(MANIFEST),
    holdSignalsUntilExit: true,
  });
  process.exitCode = code;
  await flushed(process.stdout);
  await flushed(process.stderr);
  // Leaving by the end of the event loop would close the signal handlers during Node's
  // teardown and give a signal arriving then its default action (death by 128+n after the
  // result is published). process.exit keeps them in place until the process is gone.
  process.exit(code);
}

/** Resolves once everything written so far has left the stream (async pipes on macOS). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) {
      resolve();
      return;
    }
    stream.write('', () => resolve());
  });
}
