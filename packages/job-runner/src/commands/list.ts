import { parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { listJobs } from '../jobs.js';
import { formatListTable } from '../render.js';
import type { Context } from './context.js';

export async function cmdList(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'list');
  if (args.positional.length > 0) throw usageError('list takes no job name');
  const rows = listJobs({ env: ctx.env, all: args.flags.has('--all') });
  ctx.out(args.flags.has('--json') ? JSON.stringify(rows) + '\n' : formatListTable(rows));
  return EXIT_OK;
}
