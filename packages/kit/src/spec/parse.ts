import { CliError } from '../cli/index.js';
import { multiAgentWording } from './argparse.js';
import type { BinSpec, CommandSpec, OptionSpec, PositionalSpec, ValueSpec } from './types.js';

/**
 * What was wrong with a command line, for code that decides by it (never by the message text,
 * which is worded for people and may change):
 * - `unknown-command`, `unknown-option`, `unexpected-argument`: `word` is the word as typed;
 * - `unexpected-value` (a flag given `=value`), `missing-value`, `invalid-value`, `repeated-option`,
 *   `missing-option`, `exclusive-options`: `word` is the option (`--mode`);
 * - `missing-argument`: `word` is the positional's name (`PROMPT`);
 * - `usage`: a bin's own check after parsing (usageMistake), `word` is empty.
 */
export type ArgvErrorKind =
  | 'unknown-command'
  | 'unknown-option'
  | 'unexpected-value'
  | 'missing-value'
  | 'invalid-value'
  | 'repeated-option'
  | 'missing-option'
  | 'exclusive-options'
  | 'unexpected-argument'
  | 'missing-argument'
  | 'usage';

/**
 * A command-line mistake: kit's one error type, with the bin's usage exit code (2 unless the
 * bin declares another), the command it happened in, and what went wrong as data (`kind`,
 * `word`: decide by these, never by the message). The message is worded by kit, the same in
 * every bin, and ends by pointing at the help of the command the mistake is in:
 * `unknown option: --x (see prun-quota route --help)`. One line, as every usage error.
 */
export class ArgvError extends CliError {
  constructor(
    readonly kind: ArgvErrorKind,
    /** The offending word or option as typed (see ArgvErrorKind); empty for `usage`. */
    readonly word: string,
    message: string,
    exitCode: number,
    /** The command words after the bin name, e.g. `['job', 'run']`. */
    readonly path: readonly string[],
  ) {
    super(message, { exitCode });
    this.name = 'ArgvError';
  }
}

/**
 * `message (see BIN COMMAND --help)`, the end of every usage mistake of a kit-worded bin; a
 * multi-agent dialect bin words its mistakes as its original does, without it.
 */
export function withHelpPointer(spec: BinSpec, message: string, path: readonly string[] = []): string {
  return dialectAt(spec, path) === 'multi-agent' ? message : `${message} (see ${[spec.name, ...path].join(' ')} --help)`;
}

/**
 * A usage mistake a bin finds itself after parsing (a blank value, a missing operand, options
 * that do not go together): an ArgvError of kind `usage` with the bin's usage exit code, worded
 * as the parser's own mistakes are.
 */
export function usageMistake(spec: BinSpec, message: string, path: readonly string[] = []): ArgvError {
  return new ArgvError('usage', '', withHelpPointer(spec, message, path), spec.usageExit ?? 2, path);
}

/** The parser's mistake for a command word the bin does not know (for bins that dispatch themselves). */
export function unknownCommand(spec: BinSpec, word: string, path: readonly string[] = []): ArgvError {
  return argvError(spec, path, { kind: 'unknown-command', word });
}

/** The facts a mistake's message is worded from. */
export interface ArgvProblem {
  kind: ArgvErrorKind;
  /** As ArgvError.word. */
  word: string;
  /** The whole argv word (`--bogus=1`) where it differs from `word`. */
  typed?: string;
  /** `missing-value`: the value's metavariable; `invalid-value`: why; `exclusive-options`: the other option. */
  detail?: string;
  /** `invalid-value`: the value refused. */
  value?: string;
}

/** kit's wording of each mistake (the help pointer after it names the command it is in). */
function kitWording(problem: ArgvProblem): string {
  const { word, detail = '', value = '' } = problem;
  switch (problem.kind) {
    case 'unknown-command':
      return `unknown command: ${word}`;
    case 'unknown-option':
      return `unknown option: ${word}`;
    case 'unexpected-value':
      return `${word} takes no value`;
    case 'missing-value':
      return `${word} needs a value (${detail})`;
    case 'invalid-value':
      return `${word} ${detail}, not '${value}'`;
    case 'repeated-option':
      return `${word} given twice`;
    case 'missing-option':
    case 'missing-argument':
      return `missing ${word}`;
    case 'exclusive-options':
      return `${word} cannot be combined with ${detail}`;
    case 'unexpected-argument':
      return `unexpected argument '${word}'`;
    case 'usage':
      return detail;
  }
}

function argvError(spec: BinSpec, path: readonly string[], problem: ArgvProblem): ArgvError {
  const message = dialectAt(spec, path) === 'multi-agent' ? multiAgentWording(problem) ?? kitWording(problem) : kitWording(problem);
  return new ArgvError(problem.kind, problem.word, withHelpPointer(spec, message, path), spec.usageExit ?? 2, [...path]);
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

/**
 * Whether `--version` is an option of the command at `path`: anywhere in a bin that has one,
 * but only before the command in a multi-agent dialect bin (its original's commands refuse it).
 * The parser, the help and the completion all ask this.
 */
export function versionOffered(spec: BinSpec, path: readonly string[]): boolean {
  if (spec.version === false) return false;
  const above = commandsAlong(spec, path).slice(0, -1);
  return !above.some((command) => command.argvDialect === 'multi-agent');
}

/** The bin and each command down `path` (as far as the words name commands). */
function commandsAlong(spec: CommandSpec, path: readonly string[]): CommandSpec[] {
  const along = [spec];
  for (const word of path) {
    const next = findCommand(along[along.length - 1]!, word);
    if (!next) break;
    along.push(next);
  }
  return along;
}

/** The dialect at `path`: the nearest one declared on the way down, else kit's. */
function dialectAt(spec: CommandSpec, path: readonly string[]): 'kit' | 'multi-agent' {
  return commandsAlong(spec, path).reduce<'kit' | 'multi-agent'>((dialect, command) => command.argvDialect ?? dialect, 'kit');
}

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
  // multi_agent.py's `Args`: values are kept as typed, `-n=5` splits too, and counting the
  // positionals or checking a value is left to the command (with its own messages).
  const multiAgent = (): boolean => dialectAt(spec, path) === 'multi-agent';
  const path: string[] = [];
  let command: CommandSpec = spec;
  const options: Record<string, OptionValue> = {};
  const positionals: string[] = [];
  let rest: string[] | null = null;
  const fail = (problem: ArgvProblem): never => {
    throw argvError(spec, path, problem);
  };

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
        fail({ kind: 'unknown-command', word });
      }
      positionals.push(word);
      if (command.optionsFirst) onlyPositionals = true;
      continue;
    }
    if (HELP_WORDS.has(word)) return { kind: 'help', path, command };
    if (word === '--version' && versionOffered(spec, path)) return { kind: 'version' };
    const eq = word.startsWith('--') || multiAgent() ? word.indexOf('=') : -1;
    const name = eq > 0 ? word.slice(0, eq) : word;
    const option = findOption(command, name);
    if (!option) fail({ kind: 'unknown-option', word: name, typed: word });
    const key = option!.long.replace(/^-+/, '');
    if (!option!.value) {
      if (eq > 0) fail({ kind: 'unexpected-value', word: name, typed: word });
      if (options[key] !== undefined && command.refuseRepeats) fail({ kind: 'repeated-option', word: name });
      options[key] = true;
      continue;
    }
    let raw: string;
    if (eq > 0) raw = word.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) fail({ kind: 'missing-value', word: name, detail: option!.value.name });
      i += 1;
      raw = argv[i]!;
    }
    let value: unknown = raw;
    if (!multiAgent()) {
      const converted = convert(raw, option!.value);
      if (!converted.ok) fail({ kind: 'invalid-value', word: name, detail: converted.reason, value: raw });
      value = (converted as { value: unknown }).value;
    }
    if (option!.repeatable) {
      const list = (options[key] as unknown[] | undefined) ?? [];
      list.push(value);
      options[key] = list;
    } else {
      if (options[key] !== undefined && command.refuseRepeats) fail({ kind: 'repeated-option', word: name });
      options[key] = value;
    }
  }
  if (multiAgent()) return { kind: 'run', path, command, options, positionals, rest };

  for (const option of optionsOf(command)) {
    if (option.required && options[option.long.replace(/^-+/, '')] === undefined) fail({ kind: 'missing-option', word: option.long });
  }
  for (const group of command.exclusive ?? []) {
    const given = group.filter((long) => options[long.replace(/^-+/, '')] !== undefined);
    if (given.length > 1) fail({ kind: 'exclusive-options', word: given[1]!, detail: given[0]! });
  }
  const declared = command.positionals ?? [];
  const { min, max } = positionalLimits(declared);
  if (positionals.length > max) fail({ kind: 'unexpected-argument', word: positionals[max]! });
  if (positionals.length < min) {
    const missing = declared.find((_, index) => index >= positionals.length) ?? declared[declared.length - 1];
    fail({ kind: 'missing-argument', word: missing?.name ?? 'argument' });
  }
  for (const [index, word] of positionals.entries()) {
    const positional = declared[Math.min(index, declared.length - 1)];
    if (positional && (positional.kind === 'choice' || positional.kind === 'int')) {
      const converted = convert(word, { name: positional.name, kind: positional.kind, ...(positional.choices ? { choices: positional.choices } : {}) });
      if (!converted.ok) fail({ kind: 'invalid-value', word: positional.name, detail: converted.reason, value: word });
    }
  }
  return { kind: 'run', path, command, options, positionals, rest };
}
