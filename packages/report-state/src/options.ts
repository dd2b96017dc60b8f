import { z } from 'zod';
import type { SortOrder } from './report.js';

export interface ReportOptions {
  /** As given; empty means the system temporary directory. */
  roots: string[];
  json: boolean;
  summary: boolean;
  sort: SortOrder;
  minTailBytes: number;
  includeLegacyPid: boolean;
}

export type ParsedArgs =
  | { kind: 'run'; options: ReportOptions }
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'usage-error'; message: string };

const SortSchema = z.enum(['path', 'tail-bytes-desc']);
// argparse's int: an optional sign; a negative minimum simply hides nothing (spec §5.2).
const MinTailBytesSchema = z
  .string()
  .regex(/^[+-]?[0-9]+$/, 'must be an integer')
  .transform(Number)
  .refine(Number.isSafeInteger, 'is too large');

const FLAGS = {
  '--json': 'json',
  '--summary': 'summary',
  '--include-legacy-pid': 'includeLegacyPid',
} as const;
const VALUED = new Set(['--root', '--sort', '--min-tail-bytes']);

/** argv → options. Unknown options, operands, and bad values are usage errors (exit 2). */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const options: ReportOptions = {
    roots: [],
    json: false,
    summary: false,
    sort: 'path',
    minTailBytes: 0,
    includeLegacyPid: false,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return { kind: 'help' };
    if (arg === '--version') return { kind: 'version' };
    if (arg in FLAGS) {
      options[FLAGS[arg as keyof typeof FLAGS]] = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!VALUED.has(name)) {
      const what = arg.startsWith('-') ? `unknown option '${name}'` : `unexpected argument '${arg}'`;
      return { kind: 'usage-error', message: `${what} (see --help)` };
    }
    let value: string;
    if (name !== arg) {
      value = arg.slice(eq + 1);
    } else if (i + 1 < argv.length) {
      i += 1;
      value = argv[i]!;
    } else {
      return { kind: 'usage-error', message: `${name} needs a value` };
    }
    if (name === '--root') {
      options.roots.push(value);
    } else if (name === '--sort') {
      const sort = SortSchema.safeParse(value);
      if (!sort.success) return { kind: 'usage-error', message: `--sort must be path or tail-bytes-desc, not '${value}'` };
      options.sort = sort.data;
    } else {
      const min = MinTailBytesSchema.safeParse(value);
      if (!min.success) {
        const reason = min.error.issues[0]?.message ?? 'is invalid';
        return { kind: 'usage-error', message: `--min-tail-bytes ${reason}, not '${value}'` };
      }
      options.minTailBytes = min.data;
    }
  }
  return { kind: 'run', options };
}
