import { CliError } from '../cli/index.js';
import type { BinSpec, CommandSpec, OptionSpec, PositionalSpec, ValueSpec } from './types.js';

/**
 * A command-line mistake: kit's one error type, with the bin's usage exit code (2 unless the
 * bin declares another) and the command it happened in, so the bin can point at that help.
 */
export class ArgvError extends CliError {
  constructor(
    message: string,
    exitCode: number,
    /** The command words after the bin name, e.g. `['job', 'run']`. */
    readonly path: readonly string[],
  ) {
    super(message, { exitCode });
    this.name = 'ArgvError';
  }
}

export type OptionValue = string | number | boolean | string[] | unknown;

export type ParsedArgv =
  | { kind: 'help'; path: string[]; command: CommandSpec }
  | { kind: 'version' }
  | {
      kind: 'run';
      /** The subcommand words chosen, `[]` for the bin itself. */
      path: string[];
      command: CommandSpec;
      /** Keyed by the long name without dashes (`listing`, `no-refresh`); absent options are absent. */
      options: Record<string, OptionValue>;
      positionals: string[];
      /** The words after `--` when the command declares `dashDash: 'command'`; null when no `--`. */
      rest: string[] | null;
    };

const HELP_WORDS = new Set(['-h', '--help']);

/** The options a command accepts: its own plus the implied `-h/--help` and `--version`. */
export function optionsOf(command: CommandSpec): readonly OptionSpec[] {
  return command.options ?? [];
}

export function findOption(command: CommandSpec, word: string): OptionSpec | undefined {
  return optionsOf(command).find((option) => option.long === word || option.short === word);
}

export function findCommand(command: CommandSpec, word: string): CommandSpec | undefined {
  return command.commands?.find((sub) => sub.name === word);
}

/** Walks `path` down from the bin; undefined when a word names no command. */
export function commandAt(spec: CommandSpec, path: readonly string[]): CommandSpec | undefined {
  let command: CommandSpec | undefined = spec;
  for (const word of path) command = command === undefined ? undefined : findCommand(command, word);
  return command;
}

const INTEGER = /^[+-]?\d+$/;
const SECONDS = /^\+?(\d+\.?\d*|\.\d+)$/;

/** The cheap checks every kind gets; a declared schema runs after them. Returns the value or an error text. */
function convert(value: string, spec: ValueSpec): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (spec.kind === 'int') {
    if (!INTEGER.test(value.trim())) return { ok: false, reason: 'must be an integer' };
    if (!Number.isSafeInteger(Number(value))) return { ok: false, reason: 'is too large' };
  } else if (spec.kind === 'seconds') {
    if (!SECONDS.test(value.trim())) return { ok: false, reason: 'must be a non-negative number of seconds' };
  } else if (spec.kind === 'choice') {
    const choices = spec.choices ?? [];
    if (!choices.includes(value)) return { ok: false, reason: `must be ${choiceList(choices)}` };
  }
  let converted: unknown = spec.kind === 'int' || spec.kind === 'seconds' ? Number(value) : value;
  if (spec.schema) {
    const result = spec.schema().safeParse(value);
    if (!result.success) return { ok: false, reason: result.error.issues[0]?.message ?? 'is not valid' };
    converted = result.data;
  }
  return { ok: true, value: converted };
}

function choiceList(choices: readonly string[]): string {
  if (choices.length <= 1) return choices.join('');
  return `${choices.slice(0, -1).join(', ')} or ${choices[choices.length - 1]}`;
}

function positionalLimits(positionals: readonly PositionalSpec[]): { min: number; max: number } {
  let min = 0;
  let max = 0;
  for (const positional of positionals) {
    const arity = positional.arity ?? 'one';
    if (arity === 'one') {
      min += 1;
      max += 1;
    } else if (arity === 'optional') max += 1;
    else {
      min += positional.min ?? 0;
      max = Infinity;
    }
  }
  return { min, max };
}

/**
 * Parses argv by the declaration: `--long value`, `--long=value`, `-s value`, flags, `--` ending
 * the options, `-` as an ordinary word, options anywhere unless the command has `optionsFirst`.
 * `-h`/`--help` wins the moment it is met (an error later in argv is never reached), and so does
 * `--version`; a mistake followed by `--help` shows the help. Every other mistake is an
 * ArgvError naming the option or word.
 */
export function parseArgv(spec: BinSpec, argv: readonly string[]): ParsedArgv {
  try {
    return parseStrict(spec, argv);
  } catch (error) {
    // A user who typed --help after a mistake asked for help, not for the mistake.
    const end = argv.indexOf('--');
    const words = end === -1 ? argv : argv.slice(0, end);
    if (error instanceof ArgvError && words.some((word) => HELP_WORDS.has(word))) {
      return { kind: 'help', path: [...error.path], command: commandAt(spec, error.path) ?? spec };
    }
    throw error;
  }
}

function parseStrict(spec: BinSpec, argv: readonly string[]): ParsedArgv {
  const usageExit = spec.usageExit ?? 2;
  const path: string[] = [];
  let command: CommandSpec = spec;
  const options: Record<string, OptionValue> = {};
  const positionals: string[] = [];
  let rest: string[] | null = null;
  const fail = (message: string): never => {
    throw new ArgvError(message, usageExit, path);
  };
  const where = (): string => (path.length > 0 ? ` for '${path.join(' ')}'` : '');

  let onlyPositionals = false;
  for (let i = 0; i < argv.length; i += 1) {
    const word = argv[i]!;
    if (!onlyPositionals && word === '--') {
      if (command.dashDash === 'command') {
        rest = argv.slice(i + 1);
        break;
      }
      onlyPositionals = true;
      continue;
    }
    if (onlyPositionals || word === '-' || !word.startsWith('-')) {
      const sub = positionals.length === 0 && !onlyPositionals ? findCommand(command, word) : undefined;
      if (sub) {
        path.push(word);
        command = sub;
        continue;
      }
      if (positionals.length === 0 && command.commands && !command.positionals?.length) {
        fail(`unknown command${where()}: ${word}`);
      }
      positionals.push(word);
      if (command.optionsFirst) onlyPositionals = true;
      continue;
    }
    if (HELP_WORDS.has(word)) return { kind: 'help', path, command };
    if (word === '--version' && spec.version !== false) return { kind: 'version' };
    const eq = word.startsWith('--') ? word.indexOf('=') : -1;
    const name = eq > 0 ? word.slice(0, eq) : word;
    const option = findOption(command, name);
    if (!option) fail(`unknown option${where()}: ${name}`);
    const key = option!.long.replace(/^-+/, '');
    if (!option!.value) {
      if (eq > 0) fail(`${name} takes no value`);
      if (options[key] !== undefined && command.refuseRepeats) fail(`${name} given twice`);
      options[key] = true;
      continue;
    }
    let raw: string;
    if (eq > 0) raw = word.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) fail(`${name} needs a value (${option!.value.name})`);
      i += 1;
      raw = argv[i]!;
    }
    const converted = convert(raw, option!.value);
    if (!converted.ok) fail(`${name} ${converted.reason}, not '${raw}'`);
    const value = (converted as { value: unknown }).value;
    if (option!.repeatable) {
      const list = (options[key] as unknown[] | undefined) ?? [];
      list.push(value);
      options[key] = list;
    } else {
      if (options[key] !== undefined && command.refuseRepeats) fail(`${name} given twice`);
      options[key] = value;
    }
  }

  for (const option of optionsOf(command)) {
    if (option.required && options[option.long.replace(/^-+/, '')] === undefined) fail(`missing ${option.long}${where()}`);
  }
  for (const group of command.exclusive ?? []) {
    const given = group.filter((long) => options[long.replace(/^-+/, '')] !== undefined);
    if (given.length > 1) fail(`${given[1]} cannot be combined with ${given[0]}`);
  }
  const declared = command.positionals ?? [];
  const { min, max } = positionalLimits(declared);
  if (positionals.length > max) fail(`unexpected argument '${positionals[max]}'${where()}`);
  if (positionals.length < min) {
    const missing = declared.find((_, index) => index >= positionals.length) ?? declared[declared.length - 1];
    fail(`missing ${missing?.name ?? 'argument'}${where()}`);
  }
  for (const [index, word] of positionals.entries()) {
    const positional = declared[Math.min(index, declared.length - 1)];
    if (positional && (positional.kind === 'choice' || positional.kind === 'int')) {
      const converted = convert(word, { name: positional.name, kind: positional.kind, ...(positional.choices ? { choices: positional.choices } : {}) });
      if (!converted.ok) fail(`${positional.name} ${converted.reason}, not '${word}'`);
    }
  }
  return { kind: 'run', path, command, options, positionals, rest };
}
