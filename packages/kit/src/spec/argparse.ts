/**
 * Command-line parsing with Python argparse's rules and its exact messages, for the bins whose
 * Python originals coordinators already call with argparse spellings (prun-dispatch-agy,
 * prun-snapshot-tail). What argparse does, and so what this does:
 * - any unambiguous prefix of a long option works, and `--opt=value`;
 * - `-h`/`--help` and `--version` act the moment they are reached (a later error is never seen);
 * - a value is refused when the next word looks like an option (argparse's `_parse_optional`);
 * - a choice is checked when its option is reached, required options after the last word,
 *   unrecognized words last;
 * - the last value wins, except for an `append` option, which collects.
 */
import type { ArgvProblem } from './parse.js';
import type { BinSpec } from './types.js';

/**
 * The wording of multi_agent.py's own small parser (its `Args` class), for prun-job, whose
 * messages coordinators already match: an unknown option, or a flag given `=value`, is named as
 * typed (`unknown option: --background=1`); a missing value names only the option. Undefined for
 * what that parser never says (parseArgv checks nothing else in this dialect).
 */
export function multiAgentWording(problem: ArgvProblem): string | undefined {
  if (problem.kind === 'unknown-option' || problem.kind === 'unexpected-value') return `unknown option: ${problem.typed ?? problem.word}`;
  if (problem.kind === 'missing-value') return `${problem.word} needs a value`;
  return undefined;
}

export interface ArgparseOption {
  /** `--prompt-file`. */
  long: string;
  takesValue: boolean;
  append?: boolean;
  choices?: readonly string[];
  required?: boolean;
  action?: 'help' | 'version';
}

export interface ArgparseSpec {
  options: readonly ArgparseOption[];
  /** Groups of options that exclude each other (argparse's mutually exclusive group). */
  exclusive?: ReadonlyArray<readonly string[]>;
}

export type ArgparseOutcome =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'error'; message: string }
  /** `values`: the last value of each option given (flags map to ''); `lists`: every value of an append option. */
  | { kind: 'args'; values: Map<string, string>; lists: Map<string, string[]> };

// argparse's `_negative_number_matcher`: such a word is a value, not an option.
export const ARGPARSE_NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/** The argparse view of a bin's declaration: its options plus `--help` and `--version`. */
export function argparseSpecOf(spec: BinSpec): ArgparseSpec {
  const options: ArgparseOption[] = (spec.options ?? []).map((option) => ({
    long: option.long,
    takesValue: option.value !== undefined,
    ...(option.repeatable ? { append: true } : {}),
    ...(option.value?.kind === 'choice' && option.value.choices ? { choices: option.value.choices } : {}),
    ...(option.required ? { required: true } : {}),
  }));
  options.push({ long: '--help', takesValue: false, action: 'help' });
  if (spec.version !== false) options.push({ long: '--version', takesValue: false, action: 'version' });
  return { options, ...(spec.exclusive ? { exclusive: spec.exclusive } : {}) };
}

function prefixMatches(spec: ArgparseSpec, flag: string): ArgparseOption[] {
  return spec.options.filter((option) => option.long.startsWith(flag));
}

/** Whether argparse reads this word as an option rather than a value (`_parse_optional`). */
function looksLikeOption(spec: ArgparseSpec, word: string): boolean {
  if (!word.startsWith('-') || word === '-') return false;
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    const flag = eq >= 0 ? word.slice(0, eq) : word;
    if (prefixMatches(spec, flag).length > 0) return true;
  } else if (word.startsWith('-h')) {
    return true;
  }
  if (ARGPARSE_NEGATIVE_NUMBER.test(word)) return false;
  return !word.includes(' ');
}

export function parseLikeArgparse(spec: ArgparseSpec, argv: readonly string[]): ArgparseOutcome {
  const values = new Map<string, string>();
  const lists = new Map<string, string[]>();
  const unrecognized: string[] = [];
  const seenExclusive = new Map<number, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const word = argv[i]!;
    if (word === '-h') return { kind: 'help' };
    if (word === '--') {
      unrecognized.push(...argv.slice(i + 1));
      break;
    }
    if (!word.startsWith('--')) {
      unrecognized.push(word);
      continue;
    }
    const eq = word.indexOf('=');
    const flag = eq >= 0 ? word.slice(0, eq) : word;
    const exact = spec.options.find((option) => option.long === flag);
    const matches = exact ? [exact] : prefixMatches(spec, flag);
    if (matches.length > 1) {
      return { kind: 'error', message: `ambiguous option: ${flag} could match ${matches.map((m) => m.long).join(', ')}` };
    }
    const option = matches[0];
    if (!option) {
      unrecognized.push(word);
      continue;
    }
    let value = '';
    if (!option.takesValue) {
      if (eq >= 0) return { kind: 'error', message: `argument ${option.long}: ignored explicit argument '${word.slice(eq + 1)}'` };
    } else if (eq >= 0) {
      value = word.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || looksLikeOption(spec, next)) return { kind: 'error', message: `argument ${option.long}: expected one argument` };
      value = next;
      i += 1;
    }
    if (option.action === 'help') return { kind: 'help' };
    if (option.action === 'version') return { kind: 'version' };
    if (option.choices && !option.choices.includes(value)) {
      return {
        kind: 'error',
        message: `argument ${option.long}: invalid choice: '${value}' (choose from ${option.choices.map((c) => `'${c}'`).join(', ')})`,
      };
    }
    for (const [index, group] of (spec.exclusive ?? []).entries()) {
      if (!group.includes(option.long)) continue;
      const seen = seenExclusive.get(index);
      if (seen !== undefined && seen !== option.long) {
        return { kind: 'error', message: `argument ${option.long}: not allowed with argument ${seen}` };
      }
      seenExclusive.set(index, option.long);
    }
    if (option.append) lists.set(option.long, [...(lists.get(option.long) ?? []), value]);
    values.set(option.long, value);
  }
  const missing = spec.options.filter((option) => option.required && !values.has(option.long));
  if (missing.length > 0) {
    return { kind: 'error', message: `the following arguments are required: ${missing.map((m) => m.long).join(', ')}` };
  }
  if (unrecognized.length > 0) return { kind: 'error', message: `unrecognized arguments: ${unrecognized.join(' ')}` };
  return { kind: 'args', values, lists };
}
