// Argument parsing as in the original (`--opt value`, `--opt=value`, flags, positionals, its
// messages), by kit's one parser reading prun-job's declaration in multi_agent.py's dialect.
import { readFileSync } from 'node:fs';
import { ArgvError, parseArgv, type BinSpec, type CommandSpec } from '@prun/kit/spec';
import { usageError } from './errors.js';
import { SPEC } from './spec.js';
import { BACKGROUND_TIMEOUT_S, parseFloatStrict } from './timing.js';

export interface ParsedArgs {
  /** Keyed by the option's long spelling (`--name`, `-n`); values as typed. */
  values: Map<string, string>;
  /** Flags given, by long spelling (`--follow` for `-f` too); `help` for -h/--help. */
  flags: Set<string>;
  positional: string[];
}

/**
 * Parses a command's argv as the original does, accepting exactly the options the command's
 * declaration (spec.ts) lists; counting positionals and reading values is the command's.
 */
export function parseArgs(argv: readonly string[], command: string): ParsedArgs;
/** The same with explicit option lists (the unit tests' form): each spelling is its own option. */
export function parseArgs(argv: readonly string[], withValue: readonly string[], flags: readonly string[]): ParsedArgs;
export function parseArgs(argv: readonly string[], commandOrValued: string | readonly string[], flagList: readonly string[] = []): ParsedArgs {
  const spec: BinSpec =
    typeof commandOrValued === 'string'
      ? SPEC
      : {
          ...SPEC,
          commands: [
            {
              name: 'command',
              summary: '',
              options: [
                ...commandOrValued.map((long) => ({ long, value: { name: 'X', kind: 'string' as const }, help: '' })),
                ...flagList.map((long) => ({ long, help: '' })),
              ],
            },
          ],
        };
  const name = typeof commandOrValued === 'string' ? commandOrValued : 'command';
  let parsed;
  try {
    parsed = parseArgv(spec, [name, ...argv]);
  } catch (error) {
    // The original's one error type (`.code` 64), with kit's wording of the original's message.
    throw error instanceof ArgvError ? usageError(error.message) : error;
  }
  const result: ParsedArgs = { values: new Map(), flags: new Set(), positional: [] };
  if (parsed.kind !== 'run') {
    result.flags.add('help');
    return result;
  }
  for (const option of (parsed.command as CommandSpec).options ?? []) {
    const value = parsed.options[option.long.replace(/^-+/, '')];
    if (value === undefined) continue;
    if (option.value) result.values.set(option.long, value as string);
    else result.flags.add(option.long);
  }
  result.positional = parsed.positionals;
  return result;
}

/**
 * A number of seconds as Python's float() reads it. Infinity is refused for a run's limit (0
 * already says "none", and JSON cannot hold it); `wait` allows it, as the original does, to mean
 * no limit.
 */
export function parseSeconds(value: string, option: string, { allowInfinite = false } = {}): number {
  const seconds = parseFloatStrict(value);
  if (seconds === undefined || Number.isNaN(seconds) || seconds < 0 || (!allowInfinite && !Number.isFinite(seconds))) {
    throw usageError(`${option} needs a number of seconds, got: ${value}`);
  }
  return seconds;
}

/** The run's wall-clock limit: --timeout (0 means none), else 3600 s in the background, none in the foreground. */
export function runTimeout(args: ParsedArgs, background: boolean): number | null {
  const value = args.values.get('--timeout');
  if (value !== undefined) return parseSeconds(value, '--timeout') || null;
  return background ? BACKGROUND_TIMEOUT_S : null;
}

export function readMessage(args: ParsedArgs, what: string, readStdin: () => string = () => readFileSync(0, 'utf8')): string {
  if (args.positional.length !== 1) throw usageError(`expected one ${what} (a string, or - to read stdin)`);
  let text = args.positional[0] as string;
  if (text === '-') text = readStdin().replace(/\n+$/, '');
  if (!text.trim()) throw usageError(`empty ${what}`);
  return text;
}

export function oneName(args: ParsedArgs, command: string): string {
  if (args.positional.length !== 1) throw usageError(`${command} needs one job name`);
  return args.positional[0] as string;
}

export const NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$/;
