// @prun/kit/cli: what every bin shares at its edge. Kept free of heavy imports (no zod, no
// execa): a bin shim imports this module first, and `--version` is answered before the
// command's own module is loaded.
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';

/** The exit codes every bin shares (architecture: usage 2, internal 70, temporary refusal 75). */
export const EXIT_OK = 0;
export const EXIT_USAGE = 2;
export const EXIT_INTERNAL = 70;
export const EXIT_TEMPFAIL = 75;

export interface CliErrorOptions {
  /** The exit code the bin ends with (default 2, a usage error). */
  exitCode?: number;
  /** One more line telling the user what to do next, printed after the message. */
  hint?: string;
}

/**
 * A known user-facing failure: `runBin` prints `<bin>: <message>` (and `<bin>: hint: <hint>`
 * when there is a hint) on stderr and ends with `exitCode`, never with a stack trace.
 */
export class CliError extends Error {
  readonly exitCode: number;
  readonly hint: string | undefined;

  constructor(message: string, options: CliErrorOptions = {}) {
    super(message);
    this.name = 'CliError';
    this.exitCode = options.exitCode ?? EXIT_USAGE;
    this.hint = options.hint;
  }
}

/** A usage error (exit 2). */
export function usageError(message: string, hint?: string): CliError {
  return new CliError(message, hint === undefined ? {} : { hint });
}

/**
 * The `<bin>: ...` lines a CliError prints; `label` goes before the message (job-runner passes
 * `error: `, as its Python original prints `multi-agent: error: ...`). A message names paths and
 * ids from the user or the disk, so it goes through `printable`: a directory named with a newline
 * or an escape sequence still makes one line, and cannot move the cursor.
 */
export function formatCliError(bin: string, error: CliError, label = ''): string {
  const hint = error.hint === undefined ? '' : `${bin}: hint: ${printable(error.hint)}\n`;
  return `${bin}: ${label}${printable(error.message)}\n${hint}`;
}

/** The `version` field of a package manifest (a URL such as `new URL('../package.json', import.meta.url)`). */
export function packageVersion(manifest: URL | string): string {
  const raw: unknown = JSON.parse(readFileSync(manifest, 'utf8'));
  const version = typeof raw === 'object' && raw !== null ? (raw as { version?: unknown }).version : undefined;
  return typeof version === 'string' ? version : '0.0.0';
}

/** The signals on which a bin stops (and forwards to its children): Ctrl-C, kill, hang-up. */
export const STOP_SIGNALS = Object.freeze(['SIGINT', 'SIGTERM', 'SIGHUP'] as const);
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** The shell's exit code for a process killed by `signal`: 128 + its number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 0);
}

// --- who is calling -----------------------------------------------------------------------------

const AGENT_VARIABLES = ['AI_AGENT', 'CLAUDECODE', 'CLAUDE_CODE_ENTRYPOINT', 'GEMINI_CLI', 'CURSOR_AGENT', 'OPENCODE'];

/** Whether an AI agent runs us (it reads our output; a live view or colour would only be noise). */
export function isAgentCaller(env: NodeJS.ProcessEnv): boolean {
  return Object.entries(env).some(
    ([name, value]) => !!value && (AGENT_VARIABLES.includes(name) || name.startsWith('CODEX_')),
  );
}

/** A live view on stderr only for a person at a terminal. */
export function liveViewWanted(env: NodeJS.ProcessEnv, stderrIsTty: boolean): boolean {
  return stderrIsTty && !isAgentCaller(env);
}

/**
 * Colour only for a person: not when `NO_COLOR` is set and non-empty, not for an agent caller,
 * and not when the stream it would colour is not a terminal (pass its `isTTY`).
 */
export function colourWanted(env: NodeJS.ProcessEnv, streamIsTty = true): boolean {
  return streamIsTty && !env.NO_COLOR && !isAgentCaller(env);
}

// --- the debugger door --------------------------------------------------------------------------

let doorClosed = false;

/**
 * Keep SIGUSR1 from opening the inspector. Node 20 answers SIGUSR1 by starting a debugger on
 * 127.0.0.1:9229 that any local user can attach to and run code in our process
 * (`--disable-sigusr1` exists only from Node 22.14). Installing a listener of our own replaces
 * Node's handler (checked on Node 20 and 22); the signal is then ignored. Idempotent.
 */
export function closeDebuggerDoor(): void {
  if (doorClosed) return;
  doorClosed = true;
  process.on('SIGUSR1', ignoreSignal);
}

function ignoreSignal(): void {
  // Deliberately nothing: the listener's presence is what closes the door.
}

// --- runBin -------------------------------------------------------------------------------------

/** What a command module exports: `main(argv)` returning (or setting) the exit code. */
export interface CommandModule {
  main(argv: string[]): Promise<number | void> | number | void;
  /** The command asks for RunBinOptions.exitWhenDone (so it holds under any shim that loads it). */
  exitWhenDone?: boolean;
}

export interface RunBinOptions {
  /** The bin's name, the prefix of every message (`prun-quota: ...`). */
  name: string;
  /** The package manifest, for `--version`: `new URL('../package.json', import.meta.url)`. */
  manifest: URL | string;
  /** Loads the command lazily, so `--version` never pays for it. */
  load: () => Promise<CommandModule>;
  /** Arguments (default `process.argv.slice(2)`). */
  argv?: string[];
  /** Arguments that, given alone, print the version (default `['--version']`). */
  versionFlags?: readonly string[];
  /**
   * The exit code when stdout's reader went away (EPIPE) before the command ended. Default:
   * the command's own exit code stands. job-runner passes 1, as its Python original exits.
   */
  brokenPipeExitCode?: number;
  /** The environment consulted for the debug switch (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Printed before a CliError's message (see formatCliError); default none. */
  errorLabel?: string;
  /**
   * End the process as soon as main resolves (after stdout and stderr have flushed), with its
   * exit code, and treat an error thrown in an event callback with the same one catch (then end
   * the process). For a command that keeps signal handlers in place until it is gone: leaving by
   * the end of the event loop would remove them during Node's teardown, and a signal arriving
   * then would get its default action (128+n instead of the decided outcome). dispatcher-agy.
   */
  exitWhenDone?: boolean;
}

/** `PRUN_DEBUG=1` (any non-empty value but `0`) adds the stack of an internal failure. */
export const DEBUG_ENV_VAR = 'PRUN_DEBUG';

function debugWanted(env: NodeJS.ProcessEnv): boolean {
  const value = env[DEBUG_ENV_VAR];
  return value !== undefined && value !== '' && value !== '0';
}

/** The one line an unexpected failure prints (its first message line), plus the stack when asked. */
export function formatInternalError(bin: string, error: unknown, env: NodeJS.ProcessEnv = process.env): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = `${bin}: internal error: ${message.split('\n')[0]}\n`;
  return debugWanted(env) && error instanceof Error && error.stack !== undefined ? `${line}${error.stack}\n` : line;
}

function isBrokenPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'EPIPE';
}

/**
 * The EPIPE policy, once for every bin: a reader that goes away (`prun-x | head -1`) is not an
 * error. runBin listens for 'error' on stdout and stderr, so a write to a closed pipe never
 * throws or prints a trace; later output is dropped, and the command's exit code stands
 * (or `brokenPipeExitCode` when given). Any other stream failure is an internal error (70).
 * Idempotent: runBin and commandMain both call it.
 */
const streamState: { guarded: boolean; brokenPipe: boolean; outputFinal: boolean; brokenPipeExitCode: number | undefined } = {
  guarded: false,
  brokenPipe: false,
  outputFinal: false,
  // Set by runBin or commandMain: a write to a closed pipe often fails after main has returned.
  brokenPipeExitCode: undefined,
};

export function guardStreams(): void {
  if (streamState.guarded) return;
  streamState.guarded = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (isBrokenPipe(error)) {
        if (stream === process.stdout && !streamState.outputFinal) {
          streamState.brokenPipe = true;
          if (streamState.brokenPipeExitCode !== undefined) process.exitCode = streamState.brokenPipeExitCode;
        }
        return;
      }
      process.exitCode = EXIT_INTERNAL;
    });
  }
}

/**
 * What is written to stdout from now on is the command's final answer: a reader gone while it is
 * written no longer counts as a broken pipe (brokenPipeExitCode is not applied; the command's
 * exit code stands). job-runner's result block, as in its Python original.
 */
export function markOutputFinal(): void {
  streamState.outputFinal = true;
}

/** Whether stdout's reader went away during this process. */
export function stdoutBroken(): boolean {
  return streamState.brokenPipe;
}

/**
 * The one top-level catch: a CliError prints its lines and sets its exit code; a broken pipe is
 * left to the EPIPE policy (returns true); anything else is `<bin>: internal error: <line>` and
 * exit 70. Returns whether the failure was a broken pipe.
 */
export function reportFailure(bin: string, error: unknown, env: NodeJS.ProcessEnv = process.env, errorLabel = ''): boolean {
  if (error instanceof CliError) {
    process.stderr.write(formatCliError(bin, error, errorLabel));
    process.exitCode = error.exitCode;
    return false;
  }
  if (isBrokenPipe(error)) return true;
  process.stderr.write(formatInternalError(bin, error, env));
  process.exitCode = EXIT_INTERNAL;
  return false;
}

/**
 * A command's `main(argv)` that never throws: `run`'s returned number becomes
 * `process.exitCode`, and a failure goes through `reportFailure` under the bin's own name. A bin
 * module exports this, so it behaves the same under its own shim and hosted by `prun <command>`.
 */
export interface CommandMainOptions {
  /** As RunBinOptions.brokenPipeExitCode, so it holds when `prun <command>` hosts the command too. */
  brokenPipeExitCode?: number;
  /** As RunBinOptions.errorLabel. */
  errorLabel?: string;
}

export function commandMain(
  bin: string,
  run: (argv: string[]) => Promise<number | void> | number | void,
  options: CommandMainOptions = {},
): (argv: string[]) => Promise<void> {
  return async (argv) => {
    guardStreams();
    if (options.brokenPipeExitCode !== undefined) streamState.brokenPipeExitCode = options.brokenPipeExitCode;
    try {
      const code = await run(argv);
      if (typeof code === 'number') process.exitCode = code;
    } catch (error) {
      if (reportFailure(bin, error, process.env, options.errorLabel)) streamState.brokenPipe = true;
    }
    if (streamState.brokenPipe && options.brokenPipeExitCode !== undefined) process.exitCode = options.brokenPipeExitCode;
  };
}

/**
 * The whole life of a bin: close the debugger door, guard the streams, answer `--version`
 * without loading the command, run `main`, and catch once at the top. A CliError prints its
 * lines and sets its exit code; anything else is `<bin>: internal error: <line>` and exit 70.
 * It sets `process.exitCode` and returns; it calls `process.exit` only for `exitWhenDone`.
 */
export async function runBin(options: RunBinOptions): Promise<void> {
  const argv = options.argv ?? process.argv.slice(2);
  const env = options.env ?? process.env;
  closeDebuggerDoor();
  guardStreams();
  if (options.brokenPipeExitCode !== undefined) streamState.brokenPipeExitCode = options.brokenPipeExitCode;
  try {
    const versionFlags = options.versionFlags ?? ['--version'];
    if (argv.length === 1 && versionFlags.includes(argv[0] as string)) {
      process.stdout.write(`${packageVersion(options.manifest)}\n`);
      process.exitCode = EXIT_OK;
      return;
    }
    const command = await options.load();
    if (options.exitWhenDone === true || command.exitWhenDone === true) exitWhenDone = true;
    if (exitWhenDone) process.on('uncaughtException', (error) => endAfterUncaught(options.name, error, env));
    const code = await command.main(argv);
    if (typeof code === 'number') process.exitCode = code;
  } catch (error) {
    if (reportFailure(options.name, error, env, options.errorLabel)) streamState.brokenPipe = true;
  }
  if (streamState.brokenPipe && options.brokenPipeExitCode !== undefined) process.exitCode = options.brokenPipeExitCode;
  if (exitWhenDone) await endProcess();
}

let exitWhenDone = false;

/** An error thrown in an event callback of an exitWhenDone command: the one catch, then the end. */
function endAfterUncaught(bin: string, error: unknown, env: NodeJS.ProcessEnv): void {
  reportFailure(bin, error, env);
  void endProcess();
}

/**
 * The process-ending of RunBinOptions.exitWhenDone, for a bin edge only (runBin, or a shim that
 * hosts an exitWhenDone command without runBin): once everything written has left stdout and
 * stderr, end with process.exitCode, keeping every signal handler in place until the process is
 * gone. Library code never calls it.
 */
export async function endProcess(): Promise<never> {
  await flushed(process.stdout);
  await flushed(process.stderr);
  process.exit();
}

/** Resolves once everything written so far has left the stream (async pipes on macOS). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) {
      resolve();
      return;
    }
    stream.write('', () => resolve());
  });
}

// C0 controls, DEL and C1 controls: no state directory a dispatcher makes holds one, and a
// newline or an escape sequence in a name is how a line could forge protocol output.
// U+2028 and U+2029 too: Python's `str.splitlines` ends a line at them.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const ESCAPED = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\\]/g;

/** Does `text` hold a character that could end a line or move the cursor? */
export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/**
 * Text safe to print on one line of a line protocol or a terminal: unchanged unless it holds a
 * control character; then every control character becomes `\xHH` (line separators `\u2028`,
 * `\u2029`) and every backslash `\\`, so a name can neither end the line (forging a
 * `MONITOR-EVENT`, `DONE` or table line) nor move the cursor. Names without control characters
 * print byte for byte. For text output only: JSON output keeps the real name.
 */
export function printable(text: string): string {
  if (!CONTROL_CHARACTER.test(text)) return text;
  return text.replace(ESCAPED, (ch) => {
    if (ch === '\\') return '\\\\';
    const code = ch.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`;
  });
}
