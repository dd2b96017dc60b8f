// The detached runner process of one run: `prun-job __runner JOB_DIR LOCK_FD [SERVER_FD [CALLER_FD]]`.
// The job directory follows `__runner` and a space, so a person can find a stuck runner with
// `pkill -f`. This module is the runner process's own entry, never part of the library: it loads
// only what relaying between the control socket and pi needs.
import { jobFile, socketPath } from './paths.js';
import { Runner } from './runner.js';
import { recordEnd } from './state.js';
import { appendText, removeFile, utcNow } from './text.js';
import { timingsFromEnv } from './timing.js';

function fdArgument(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

/** Run the job to its end and record it; returns the process's exit code. */
export async function runnerMain(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [jobDir, , serverText, callerText] = argv;
  if (!jobDir) throw new Error('the runner needs a job directory');
  let runner: Runner | undefined;
  const fail = async (error: unknown): Promise<void> => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    appendText(jobFile(jobDir, 'runner.log'), `${utcNow()}\n${text}\n\n`);
    if (runner) await runner.emergencyStop();
    // Record the failure before the lock is released (when this process exits).
    if (runner) runner.conclude('failed', `the runner failed; see ${jobFile(jobDir, 'runner.log')}`);
    else recordEnd(jobDir, 'failed', `the runner failed; see ${jobFile(jobDir, 'runner.log')}`);
    // A socket the starting command bound for a runner that never served it.
    if (!runner) removeFile(socketPath(jobDir));
  };
  // This process exists only for this run: after an unexpected error nothing else is worth
  // keeping alive, and exiting releases the job's lock.
  process.on('uncaughtException', (error) => {
    void fail(error).finally(() => process.exit(1));
  });
  try {
    runner = new Runner(jobDir, fdArgument(callerText), fdArgument(serverText), timingsFromEnv(env), env);
    await runner.run();
  } catch (error) {
    await fail(error);
  } finally {
    await runner?.shutdown();
  }
  // The run is recorded. Should any handle still be open, it must not keep the lock held (the job
  // would look running): the process ends a moment later regardless.
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}
