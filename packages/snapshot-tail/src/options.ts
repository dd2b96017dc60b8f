export const BIN = 'prun-snapshot-tail';

export const USAGE = `usage: ${BIN} [-h] [--version] --unit UNIT [--dest DEST | --output OUTPUT] [--json]`;

/** What the user asked for, after argv parsing. Empty `--dest`/`--output` mean "not given". */
export interface SnapshotOptions {
  unit: string;
  dest?: string;
  output?: string;
  json: boolean;
}

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; options: SnapshotOptions };

/** A command-line mistake: exit 2 with the usage line and `error: <message>`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

// argv words are always strings; the one thing a path argument can carry that the OS refuses
// later with a confusing error is a NUL. Checked by hand: zod would cost this bin about 40 ms
// and 13 MiB at every start for a check this small.
function noNul(option: ValueOption, value: string | undefined): string | undefined {
  if (value?.includes('\0')) throw new UsageError(`argument ${option}: embedded null byte`);
  return value;
}

type ValueOption = '--unit' | '--dest' | '--output';
type FlagOption = '--json' | '--help' | '--version';
const VALUE_OPTIONS: readonly ValueOption[] = ['--unit', '--dest', '--output'];
const FLAG_OPTIONS: readonly FlagOption[] = ['--json', '--help', '--version'];
const ALL_OPTIONS: readonly string[] = [...VALUE_OPTIONS, ...FLAG_OPTIONS];
const EXCLUSIVE: readonly ValueOption[] = ['--dest', '--output'];

// argparse takes `-5` as a value but any other dash-led word as an option.
const LOOKS_LIKE_NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

function resolveOptionName(word: string): string {
  if (word === '-h') return '--help';
  if (ALL_OPTIONS.includes(word)) return word;
  // argparse accepts an unambiguous prefix of a long option.
  const matches = ALL_OPTIONS.filter((name) => name.startsWith(word));
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) throw new UsageError(`ambiguous option: ${word} could match ${matches.join(', ')}`);
  return word;
}

/**
 * Parse argv the way the upstream argparse parser does, in order: `--help`/`--version` win when
 * reached, `--dest` and `--output` exclude each other (even when one is empty), the last of a
 * repeated option wins, and `--unit` is required.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values: Partial<Record<ValueOption, string>> = {};
  let json = false;
  const unrecognized: string[] = [];
  let seenExclusive: ValueOption | undefined;
  for (let i = 0; i < argv.length; i += 1) {
    const word = argv[i]!;
    if (word === '--') {
      unrecognized.push(...argv.slice(i + 1));
      break;
    }
    if (!word.startsWith('-') || word === '-' || LOOKS_LIKE_NEGATIVE_NUMBER.test(word)) {
      unrecognized.push(word);
      continue;
    }
    const equals = word.startsWith('--') ? word.indexOf('=') : -1;
    const name = resolveOptionName(equals === -1 ? word : word.slice(0, equals));
    const inline = equals === -1 ? undefined : word.slice(equals + 1);
    if ((FLAG_OPTIONS as readonly string[]).includes(name)) {
      if (inline !== undefined) throw new UsageError(`argument ${name}: ignored explicit argument '${inline}'`);
      if (name === '--help') return { kind: 'help' };
      if (name === '--version') return { kind: 'version' };
      json = true;
      continue;
    }
    if (!(VALUE_OPTIONS as readonly string[]).includes(name)) {
      unrecognized.push(word);
      continue;
    }
    const option = name as ValueOption;
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('-') && next !== '-' && !LOOKS_LIKE_NEGATIVE_NUMBER.test(next))) {
        throw new UsageError(`argument ${option}: expected one argument`);
      }
      value = next;
      i += 1;
    }
    if (EXCLUSIVE.includes(option)) {
      if (seenExclusive !== undefined && seenExclusive !== option) {
        throw new UsageError(`argument ${option}: not allowed with argument ${seenExclusive}`);
      }
      seenExclusive = option;
    }
    values[option] = value;
  }
  if (values['--unit'] === undefined) throw new UsageError('the following arguments are required: --unit');
  if (unrecognized.length > 0) throw new UsageError(`unrecognized arguments: ${unrecognized.join(' ')}`);
  const unit = noNul('--unit', values['--unit'])!;
  const dest = noNul('--dest', values['--dest'] || undefined);
  const output = noNul('--output', values['--output'] || undefined);
  return {
    kind: 'run',
    options: { unit, json, ...(dest !== undefined ? { dest } : {}), ...(output !== undefined ? { output } : {}) },
  };
}

/** The environment settings snapshot-tail reads. Empty values count as unset. */
export interface SnapshotEnv {
  xdgStateHome?: string;
  home?: string;
}

// Environment values are strings or absent by construction; only emptiness matters here.
export function parseEnv(env: NodeJS.ProcessEnv): SnapshotEnv {
  const { XDG_STATE_HOME: xdgStateHome, HOME: home } = env;
  return { ...(xdgStateHome ? { xdgStateHome } : {}), ...(home ? { home } : {}) };
}
