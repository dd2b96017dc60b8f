import { argparseSpecOf, parseLikeArgparse } from '@prun/kit/spec';
import { SPEC, type Mode } from './spec.js';

/**
 * Command-line parsing with argparse's rules (kit's shared argparse module, driven by the
 * declaration in spec.ts), because coordinators already call the original with argparse
 * spellings: any unambiguous prefix of a long option, `--opt=value`, the last value winning
 * except for the accumulating `--add-dir`.
 */

export { MODES, type Mode } from './spec.js';

export interface ParsedArgs {
  promptFile: string;
  resultFile: string;
  unitId: string;
  mode: Mode | null;
  addDirs: string[];
  continueFrom: string | null;
}

export type ArgsOutcome =
  | { kind: 'args'; args: ParsedArgs }
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'error'; message: string };

const ARGPARSE = argparseSpecOf(SPEC);

export function parseArgs(argv: readonly string[]): ArgsOutcome {
  const outcome = parseLikeArgparse(ARGPARSE, argv);
  if (outcome.kind !== 'args') return outcome;
  const { values, lists } = outcome;
  return {
    kind: 'args',
    args: {
      promptFile: values.get('--prompt-file')!,
      resultFile: values.get('--result-file')!,
      unitId: values.get('--unit-id')!,
      mode: (values.get('--mode') as Mode | undefined) ?? null,
      addDirs: lists.get('--add-dir') ?? [],
      continueFrom: values.get('--continue-from') ?? null,
    },
  };
}
