// Argument parsing as in the original: `--opt value`, `--opt=value`, flags and positionals.
import { readFileSync } from 'node:fs';
import { commandAt } from '@prun/kit/spec';
import { usageError } from './errors.js';
import { SPEC } from './spec.js';
import { BACKGROUND_TIMEOUT_S, parseFloatStrict } from './timing.js';

export interface ParsedArgs {
  values: Map<string, string>;
  flags: Set<string>;
  positional: string[];
}

/**
 * The options `command` accepts, as its declaration (spec.ts) lists them: those that take a
 * value, and flags (long and short spellings each).
 */
export function declaredOptions(command: string): { withValue: string[]; flags: string[] } {
  const options = commandAt(SPEC, [command])?.options ?? [];
  const spellings = (taking: boolean) =>
    options.filter((option) => (option.value !== undefined) === taking).flatMap((option) => [option.long, ...(option.short ? [option.short] : [])]);
  return { withValue: spellings(true), flags: spellings(false) };
}

/**
 * Parses a command's argv as the original does (`--opt value`, `--opt=value`, flags, `--`, its
 * messages), accepting exactly the options the command's declaration lists.
 */
export function parseArgs(argv: readonly string[], command: string): ParsedArgs;
/** The same with explicit option lists (the unit tests' form). */
export function parseArgs(argv: readonly string[], withValue: readonly string[], flags: readonly string[]): ParsedArgs;
export function parseArgs(argv: readonly string[], commandOrValued: string | readonly string[], flagList: readonly string[] = []): ParsedArgs {
  const { withValue, flags } = typeof commandOrValued === 'string' ? declaredOptions(commandOrValued) : { withValue: commandOrValued, flags: flagList };
  const parsed: ParsedArgs = { values: new Map(), flags: new Set(), positional: [] };
  let onlyPositional = false;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (onlyPositional || arg === '-' || !arg.startsWith('-')) {
      parsed.positional.push(arg);
    } else if (arg === '--') {
      onlyPositional = true;
    } else if (arg === '-h' || arg === '--help') {
      parsed.flags.add('help');
    } else {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg : arg.slice(0, eq);
      if (withValue.includes(name)) {
        let value: string;
        if (eq < 0) {
          if (i + 1 >= argv.length) throw usageError(`${name} needs a value`);
          i += 1;
          value = argv[i] as string;
        } else {
          value = arg.slice(eq + 1);
        }
        parsed.values.set(name, value);
      } else if (flags.includes(name) && eq < 0) {
        parsed.flags.add(name);
      } else {
        throw usageError(`unknown option: ${arg}`);
      }
    }
  }
  return parsed;
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
