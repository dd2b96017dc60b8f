import { basename } from 'node:path';
import { oneName, parseArgs, parseSeconds } from '../args.js';
import { EXIT_STILL_RUNNING } from '../errors.js';
import { findJob } from '../jobs.js';
import { jobFile } from '../paths.js';
import { renderStillRunning } from '../render.js';
import { jobState } from '../state.js';
import { readText } from '../text.js';
import { sleep } from '../timing.js';
import type { Context } from './context.js';
import { printResult } from './result.js';

function lastProgressLine(jobDir: string): string | undefined {
  const lines = (readText(jobFile(jobDir, 'progress.log')) ?? '').split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  return lines[lines.length - 1];
}

export async function cmdWait(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'wait');
  const jobDir = findJob(oneName(args, 'wait'), ctx.env);
  const json = args.flags.has('--json');
  const timeoutText = args.values.get('--timeout');
  const timeout = timeoutText === undefined ? undefined : parseSeconds(timeoutText, '--timeout', { allowInfinite: true });
  const end = timeout === undefined || timeout === Infinity ? undefined : Date.now() + timeout * 1000;
  // Quicker than the original's half-second poll: a finished job is reported within 0.1 s.
  const pollMs = Math.min(ctx.timings.waitPollS, 0.1) * 1000;
  for (;;) {
    const status = jobState(jobDir);
    if (status !== 'running') return printResult(ctx, jobDir, status, json);
    if (end !== undefined && Date.now() >= end) {
      ctx.out(renderStillRunning(basename(jobDir), timeout, lastProgressLine(jobDir), json));
      return EXIT_STILL_RUNNING;
    }
    await sleep(end === undefined ? pollMs : Math.max(0, Math.min(pollMs, end - Date.now())));
  }
}
