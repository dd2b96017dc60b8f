import { ArgvError, parseArgv } from '@prun/kit/spec';
import type { SortOrder } from './report.js';
import { SPEC } from './spec.js';

export interface ReportOptions {
  /** As given; empty means the system temporary directory. */
  roots: string[];
  /** `--batch DIR`: only the state dirs this batch recorded; null for every unit under the roots. */
  batch: string | null;
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

/**
 * argv → options, by the declaration in spec.ts. Unknown options, operands, and bad values are
 * usage errors (exit 2). `--min-tail-bytes` is argparse's int: an optional sign; a negative
 * minimum simply hides nothing.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgv(SPEC, argv);
  } catch (error) {
    // kit's wording, the same as every bin's: it already points at `prun-report-state --help`.
    if (!(error instanceof ArgvError)) throw error;
    return { kind: 'usage-error', message: error.message };
  }
  if (parsed.kind !== 'run') return { kind: parsed.kind };
  const { options } = parsed;
  return {
    kind: 'run',
    options: {
      roots: (options['root'] as string[] | undefined) ?? [],
      batch: (options['batch'] as string | undefined) ?? null,
      json: options['json'] === true,
      summary: options['summary'] === true,
      sort: (options['sort'] as SortOrder | undefined) ?? 'path',
      minTailBytes: (options['min-tail-bytes'] as number | undefined) ?? 0,
      includeLegacyPid: options['include-legacy-pid'] === true,
    },
  };
}
