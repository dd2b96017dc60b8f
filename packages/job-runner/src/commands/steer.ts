import { basename } from 'node:path';
import { parseArgs, readMessage } from '../args.js';
import { sendControl } from '../control/client.js';
import { EXIT_OK, usageError } from '../errors.js';
import { findJob } from '../jobs.js';
import type { Context } from './context.js';

export async function cmdSteer(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'steer');
  if (args.positional.length < 1) throw usageError('steer needs a job name and a message');
  const name = args.positional.shift() as string;
  const message = readMessage(args, 'message', ctx.readStdin);
  const jobDir = findJob(name, ctx.env);
  const reply = await sendControl(jobDir, { type: 'steer', message }, ctx.timings);
  ctx.out(`job: ${basename(jobDir)}\nsteer: ${String(reply['disposition'] ?? 'queued')}\n`);
  return EXIT_OK;
}
