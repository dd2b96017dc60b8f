import { basename } from 'node:path';
import { oneName, parseArgs } from '../args.js';
import { sendControl } from '../control/client.js';
import { EXIT_OK } from '../errors.js';
import { findJob } from '../jobs.js';
import type { Context } from './context.js';

export async function cmdAbort(argv: string[], ctx: Context): Promise<number> {
  const jobDir = findJob(oneName(parseArgs(argv, 'abort'), 'abort'), ctx.env);
  const reply = await sendControl(jobDir, { type: 'abort' }, ctx.timings);
  ctx.out(`job: ${basename(jobDir)}\nabort: ${String(reply['disposition'] ?? 'requested')}\n`);
  return EXIT_OK;
}
