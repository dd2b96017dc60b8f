import { parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { logicalCwd } from '../paths.js';
import { loadProfiles } from '../profiles.js';
import { formatProfiles } from '../render.js';
import type { Context } from './context.js';

export async function cmdProfiles(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'profiles');
  if (args.positional.length > 0) throw usageError('profiles takes no arguments');
  ctx.out(formatProfiles([...loadProfiles(logicalCwd(ctx.env), ctx.env).values()]));
  return EXIT_OK;
}
