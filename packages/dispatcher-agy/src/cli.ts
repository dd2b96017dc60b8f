import { readFileSync } from 'node:fs';
import { closeDebuggerDoor } from '@prun/kit/cli';
import { HELP } from './help.js';
import { dispatch } from './run.js';
import { MESSAGE_PREFIX } from './settings.js';

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

export async function main(argv: string[]): Promise<void> {
  // SIGUSR1 would open an inspector on 127.0.0.1:9229 in the process that holds the
  // unscrubbed environment.
  closeDebuggerDoor();
  // Last line of defence: whatever escapes the dispatcher's own handling is one line, not a trace.
  process.on('uncaughtException', (error) => {
    process.stderr.write(`${MESSAGE_PREFIX}internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(70);
  });
  // A reader that went away (EPIPE) loses our messages, never the unit: the exit code stays the
  // outcome, which is what a batch or coordinator reads.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  const code = await dispatch(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    help: () => HELP,
    version: packageVersion,
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
