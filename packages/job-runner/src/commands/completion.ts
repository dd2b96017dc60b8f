import { completionScript, SHELLS, type Shell } from '@prun/kit/spec';
import { parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { jobNames } from '../jobs.js';
import { SPEC } from '../spec.js';
import type { Context } from './context.js';

/** `prun-job completion bash|zsh|fish`: the script generated from prun-job's declaration. */
export async function cmdCompletion(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'completion');
  const shell = args.positional[0] as Shell;
  if (args.positional.length !== 1 || !SHELLS.includes(shell)) throw usageError('completion needs a shell: bash, zsh or fish');
  ctx.out(completionScript(SPEC, shell));
  return EXIT_OK;
}

/** Job names of the current project, one a line, for shell completion. */
export async function cmdNames(_argv: string[], ctx: Context): Promise<number> {
  ctx.out(jobNames(ctx.env).map((name) => name + '\n').join(''));
  return EXIT_OK;
}
