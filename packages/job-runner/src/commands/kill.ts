import { basename } from 'node:path';
import { oneName, parseArgs } from '../args.js';
import { sendRequest } from '../control/client.js';
import { CommandError, EXIT_FAIL, EXIT_OK, NotRunningError, usageError } from '../errors.js';
import { findJob, projectJobs } from '../jobs.js';
import { logicalCwd } from '../paths.js';
import { jobState, jobStates } from '../state.js';
import { shellQuote } from '../text.js';
import { waitWhile } from '../timing.js';
import type { Context } from './context.js';

/** The pattern a person can give `pkill -f` to find a stuck runner of this job. */
export function runnerPattern(jobDir: string): string {
  // `[_]` keeps the pattern from matching the shell that runs the pkill.
  return `[_]_runner ${jobDir.replace(/([.^$*+?()[\]{}|\\])/g, '\\$1')} `;
}

/**
 * Ask the job's runner to stop the run and wait until it has exited. The runner records
 * `killed` itself; this writes nothing.
 */
async function killJob(jobDir: string, ctx: Context): Promise<string> {
  const name = basename(jobDir);
  const stuck = `the runner of job ${name} is not responding; to stop it, run: pkill -KILL -f ${shellQuote(runnerPattern(jobDir))}`;
  let reply: Record<string, unknown> | undefined;
  try {
    reply = await sendRequest(jobDir, { type: 'kill' }, stuck, ctx.timings);
  } catch (error) {
    if (!(error instanceof NotRunningError)) throw error;
    reply = { ok: false };
  }
  // A runner that is finishing answers "not running" and records its own status.
  if (!(await waitWhile(() => jobState(jobDir) === 'running', ctx.timings.runnerStopGraceS))) throw new CommandError(stuck);
  if (reply !== undefined && !reply['ok']) return `job: ${name}\nstatus: ${jobState(jobDir)} (not running)\n`;
  return `job: ${name}\nstatus: ${jobState(jobDir)}\n`;
}

export async function cmdKill(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'kill');
  if (args.flags.has('--all')) {
    if (args.positional.length > 0) throw usageError('kill takes a job name or --all, not both');
    const dirs = projectJobs(logicalCwd(ctx.env), ctx.env);
    const states = jobStates(dirs);
    const running = dirs.filter((_d, i) => states[i] === 'running');
    if (running.length === 0) {
      ctx.out('no running jobs in this project\n');
      return EXIT_OK;
    }
    const results = await Promise.all(
      running.map(async (dir) => {
        try {
          return await killJob(dir, ctx);
        } catch (error) {
          if (!(error instanceof CommandError)) throw error;
          return `job: ${basename(dir)}\nerror: ${error.message}\n`;
        }
      }),
    );
    ctx.out(results.join(''));
    return results.some((r) => r.includes('\nerror: ')) ? EXIT_FAIL : EXIT_OK;
  }
  const jobDir = findJob(oneName(args, 'kill'), ctx.env);
  ctx.out(await killJob(jobDir, ctx));
  return EXIT_OK;
}
