// The detached runner process of one run: `prun-job __runner JOB_DIR LOCK_FD [SERVER_FD [CALLER_FD]]`.
// The job directory follows `__runner` and a space, so a person can find a stuck runner with
// `pkill -f`. This module is the runner process's own entry, never part of the library: the bin
// hands `__runner` straight to it (not through cli.ts, its help and its declaration), so the
// runner loads only what relaying between the control socket and pi needs.
import { endProcess } from '@prun/kit/cli';
import { jobFile, socketPath } from './paths.js';
import { Runner } from './runner.js';
import { recordEnd } from './state.js';
import { appendText, removeFile, utcNow } from './text.js';
import { timingsFromEnv } from './timing.js';

function fdArgument(text: string | undefined): number | undefined {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

/**
 * Run the job to its end, record it, and end the process. The runner exists only for this run,
 * and while it lives it holds the job's lock (the job reads as running): so it ends as soon as
 * the end is recorded, whatever handle might still be open (a pipe a grandchild of pi kept), and
 * after an unexpected error nothing else is worth keeping alive either. It ends through kit's
 * endProcess, the bin edge's one way out.
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<never> {
  const [, jobDir, , serverText, callerText] = argv;
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
  process.on('uncaughtException', (error) => {
    void fail(error).finally(() => {
      process.exitCode = 1;
      void endProcess();
    });
  });
  try {
    runner = new Runner(jobDir, fdArgument(callerText), fdArgument(serverText), timingsFromEnv(env), env);
    await runner.run();
  } catch (error) {
    await fail(error);
  } finally {
    await runner?.shutdown();
  }
  process.exitCode = 0;
  return endProcess();
}
