/**
 * The declaration of a bin: plain data, written once per bin, from which its argv parser, its
 * `--help` text, its shell completion and its exit-code tables are generated. Nothing here is
 * constructed at import time beyond object literals, so a bin's start-up stays cheap; a zod
 * schema for a value is given as a thunk and built only when that value is parsed.
 */

/**
 * What an option's value (or a positional) is. The kind decides both the cheap validation the
 * parser applies and what shell completion offers:
 * string/int/seconds: nothing to offer; path/file: file names; dir: directories;
 * choice: the declared choices; job-name: names from the bin's data listing; command: commands.
 */
export type ValueKind = 'string' | 'int' | 'seconds' | 'path' | 'file' | 'dir' | 'job-name' | 'choice' | 'command';

/** Anything with zod's `safeParse` shape; kit does not import zod itself. */
export interface SafeParser {
  safeParse(input: unknown): { success: true; data: unknown } | { success: false; error: { issues: ReadonlyArray<{ message: string }> } };
}

export interface ValueSpec {
  /** The metavariable shown in help and usage: FILE, N, S, DIR. */
  name: string;
  kind: ValueKind;
  /** For `choice`: the accepted words, in the order help lists them. */
  choices?: readonly string[];
  /** Built on first use only (zod costs tens of milliseconds to import). */
  schema?: () => SafeParser;
}

export interface OptionSpec {
  /** `--listing`. */
  long: string;
  /** `-n`. */
  short?: string;
  /** Absent: a flag (boolean). */
  value?: ValueSpec;
  /** A value option given more than once collects every value (in order) instead of the last. */
  repeatable?: boolean;
  /** Shown in help as "(default: X)"; the parser leaves absent options out of its result. */
  default?: string;
  help: string;
  /** The command cannot run without it. */
  required?: boolean;
  /** Parsed, but neither shown in help nor offered by completion. */
  hidden?: boolean;
}

export interface PositionalSpec {
  /** PROMPT, NAME, STATE_DIR. */
  name: string;
  kind: ValueKind;
  /** How many it takes: exactly one (default), zero or one, or any number (`many`, at least `min`). */
  arity?: 'one' | 'optional' | 'many';
  /** With arity `many`: the least number. */
  min?: number;
  choices?: readonly string[];
  /**
   * Words completion offers for it that the parser does not enforce (`prun help`'s COMMAND: the
   * command names, while a fronted command's subcommand may follow).
   */
  suggest?: readonly string[];
}

export interface EnvSpec {
  name: string;
  help: string;
  default?: string;
}

export interface ExitCodeSpec {
  /** 0, 75, or a pattern such as `128+n`, `1-100`, `N`. */
  code: number | string;
  /** One sentence; Markdown backticks allowed (they are dropped in `--help`). */
  meaning: string;
}

export interface CommandSpec {
  name: string;
  /** One line: shown in the parent's command list and as fish's description. */
  summary: string;
  /** Usage lines after the bin name (`[--json] STATE_DIR...`); generated from the options when absent. */
  usage?: readonly string[];
  /** Prose after the usage lines. */
  description?: string;
  options?: readonly OptionSpec[];
  positionals?: readonly PositionalSpec[];
  commands?: readonly CommandSpec[];
  /**
   * Options end at the first positional: everything after it is a positional too (a monitor's
   * operands, a command line after `--`).
   */
  optionsFirst?: boolean;
  /** After `--`, the words are a command line to run (completion offers commands). */
  dashDash?: 'positionals' | 'command';
  /** Groups of options that exclude each other. */
  exclusive?: ReadonlyArray<readonly string[]>;
  /** A value option given twice is an error rather than "the last one wins". */
  refuseRepeats?: boolean;
  /** Prose after the options and environment, before the exit codes. */
  epilog?: string;
  /** Exit codes of this command when they differ from the bin's. */
  exitCodes?: readonly ExitCodeSpec[];
  env?: readonly EnvSpec[];
  /** Not listed in help or completion (`prun-job __names`). */
  hidden?: boolean;
  /**
   * How parseArgv words mistakes. `kit` (default): one wording for every bin, each message
   * ending `(see BIN COMMAND --help)`. `multi-agent`: the messages of multi_agent.py's argument
   * parser, byte for byte (`unknown option: --x=1`, `--x needs a value`); values stay as typed
   * and positional counts are left to the command, and only the bin itself takes `--version`
   * (prun-job). Holds for this command and every command below it (a bin fronted by another keeps it).
   */
  argvDialect?: 'kit' | 'multi-agent';
}

export interface BinSpec extends CommandSpec {
  /** Does `--version` exist (default true). */
  version?: boolean;
  /** The exit code of a usage error (2; prun-job keeps the original's 64). */
  usageExit?: number;
  /** `argparse`: lower-case headings (`usage:`, `options:`), as the Python originals print. */
  helpStyle?: 'gnu' | 'argparse';
  /** A command line that prints job names one a line, for `job-name` completion. */
  jobNames?: string;
  exitCodes: readonly ExitCodeSpec[];
}
