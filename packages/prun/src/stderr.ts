import { printable } from '@prun/kit/cli';
import type { ParsedArgv } from '@prun/kit/spec';

export const NAME = 'prun';

/** One line of prun's own on stderr. Paths and ids in it come from the user or the disk, so control
 * characters are shown escaped: a hostile directory name must not clear the screen or set the title. */
export const stderrLine = (line: string): void => void process.stderr.write(`${NAME}: ${printable(line)}\n`);

/** One of prun's own command lines, parsed by its declaration (spec.ts); -h/--help and --version were answered. */
export type OwnArgs = Extract<ParsedArgv, { kind: 'run' }>;
