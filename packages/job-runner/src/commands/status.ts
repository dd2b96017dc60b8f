import { oneName, parseArgs } from '../args.js';
import { EXIT_OK } from '../errors.js';
import { findJob } from '../jobs.js';
import { formatStatus, statusDocument } from '../render.js';
import type { Context } from './context.js';

export async function cmdStatus(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'status');
  const jobDir = findJob(oneName(args, 'status'), ctx.env);
  const doc = statusDocument(jobDir, ctx.env);
  ctx.out(args.flags.has('--json') ? JSON.stringify(doc) + '\n' : formatStatus(doc));
  return EXIT_OK;
}
