import { basename } from 'node:path';
import { oneName, parseArgs } from '../args.js';
import { CommandError, EXIT_FAIL, EXIT_OK } from '../errors.js';
import { findJob } from '../jobs.js';
import { renderResult } from '../render.js';
import { jobState } from '../state.js';
import type { Context } from './context.js';

/** Print the job's result block (or its JSON); the exit code says whether it is done. */
export function printResult(ctx: Context, jobDir: string, status: string, json: boolean): number {
  try {
    ctx.out(renderResult(jobDir, status, json), { resultBlock: true });
  } catch {
    // The caller's stdout may be gone when a signal stopped the run.
  }
  return status === 'done' ? EXIT_OK : EXIT_FAIL;
}

export async function cmdResult(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'result');
  const jobDir = findJob(oneName(args, 'result'), ctx.env);
  const status = jobState(jobDir);
  if (status === 'running') throw new CommandError(`job ${basename(jobDir)} is still running; use wait`);
  return printResult(ctx, jobDir, status, args.flags.has('--json'));
}
