import { CliError, EXIT_USAGE, formatCliError, packageVersion, printable } from '@prun/kit/cli';
import { ArgvError, parseArgv, renderHelp, usageMistake, type BinSpec } from '@prun/kit/spec';
import { BoundedLineSplitter, MAX_OPERAND_LINE_BYTES, classifyOperandLine } from './operands.js';
import { MAX_ENTRY_BYTES } from '@prun/unit-state';
import type { WatchLoop } from './loop.js';
import type { UnusableStateFile } from './observe.js';
import { MONITOR_SPEC } from './spec.js';

export interface ParsedArgs {
  json: boolean;
  help: boolean;
  version: boolean;
  /** Read operands from stdin (`-` as the only operand). */
  stdin: boolean;
  operands: string[];
}

/**
 * Options come before the operands (the declaration says `optionsFirst`); `--` ends them.
 * Everything after the first operand is an operand, so a state directory named like an option
 * can still be given after `--`.
 */
export function parseArgs(argv: readonly string[], spec: BinSpec = MONITOR_SPEC): ParsedArgs {
  let result;
  try {
    result = parseArgv(spec, argv);
  } catch (error) {
    // The message may quote a typed word: printable, so it stays one line.
    throw error instanceof ArgvError ? new ArgvError(error.kind, error.word, printable(error.message), error.exitCode, error.path) : error;
  }
  const parsed: ParsedArgs = { json: false, help: result.kind === 'help', version: result.kind === 'version', stdin: false, operands: [] };
  if (result.kind !== 'run') return parsed;
  parsed.json = result.options['json'] === true;
  parsed.operands = result.positionals;
  if (parsed.operands.includes('-')) {
    if (parsed.operands.length !== 1) throw usageMistake(spec, '`-` (operands from stdin) must be the only operand');
    parsed.stdin = true;
    parsed.operands = [];
  }
  return parsed;
}

// Agent-caller and colour detection live in @prun/kit/cli; re-exported for monitor's users.
export { colourWanted, isAgentCaller, liveViewWanted } from '@prun/kit/cli';

/** The stderr line for a state file the monitor cannot use (it goes on as if it were absent). */
export function unusableFileText(file: UnusableStateFile): string {
  const why =
    file.problem === 'NotARegularFile'
      ? 'is not a regular file (a FIFO, a device or a directory)'
      : file.problem === 'EntryTooLarge'
        ? `is larger than ${MAX_ENTRY_BYTES} bytes`
        : `cannot be read (${file.problem})`;
  return `${printable(file.path)} ${why}; ignored`;
}

/** What the stdin reader reports besides operands: skipped lines, for one stderr line each. */
export type StdinNotice =
  | { kind: 'overlong'; line: number }
  | { kind: 'refused'; line: number; reason: string; text: string };

/** The stderr line for a skipped stdin line (without the bin prefix). */
export function stdinNoticeText(notice: StdinNotice): string {
  if (notice.kind === 'overlong') {
    return `stdin line ${notice.line} is longer than ${MAX_OPERAND_LINE_BYTES} bytes; skipped`;
  }
  const shown = notice.text.length > 80 ? `${notice.text.slice(0, 80)}...` : notice.text;
  return `stdin line ${notice.line} skipped: ${notice.reason}: ${printable(shown)}`;
}

/**
 * Operands from stdin, one per line: `STATE-DIR <path>` or a plain path; blank lines skipped.
 * Lines are split in one pass with a bounded buffer; a line too long to be a path, or one that
 * is neither a path nor a `STATE-DIR` line, is passed to `onNotice` and skipped.
 */
export function readStdinOperands(
  input: NodeJS.ReadableStream,
  onOperand: (operand: string, fromStateDirLine: boolean) => void,
  onEnd: () => void,
  onNotice: (notice: StdinNotice) => void,
): () => void {
  const splitter = new BoundedLineSplitter({
    line: (bytes, line) => {
      const parsed = classifyOperandLine(bytes);
      if (parsed.kind === 'operand') onOperand(parsed.path, parsed.fromStateDirLine);
      else if (parsed.kind === 'refused') onNotice({ kind: 'refused', line, reason: parsed.reason, text: bytes.toString('utf8') });
    },
    overlong: (line) => onNotice({ kind: 'overlong', line }),
  });
  const onData = (chunk: Buffer | string): void => splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  const onClose = (): void => {
    input.removeListener('data', onData);
    input.removeListener('end', onClose);
    input.removeListener('error', onClose);
    splitter.end();
    onEnd();
  };
  input.on('data', onData);
  input.on('end', onClose);
  // A stdin that fails (EIO from a vanished terminal) ends the operand list like EOF.
  input.on('error', onClose);
  return () => {
    input.removeListener('data', onData);
    input.removeListener('end', onClose);
    input.removeListener('error', onClose);
    input.on('error', () => {});
    if ('destroy' in input && typeof input.destroy === 'function') input.destroy();
  };
}

/** Print a line on stdout (a reader that went away is runBin's business: EPIPE is ignored there). */
export function writeLine(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** What a watch bin (monitor or gather) plugs into `runWatchCli`. */
export interface WatchCli<Settings, Run extends WatchLoop> {
  spec: BinSpec;
  /**
   * What a usage error (exit 2) prints on stdout besides its one stderr line: monitor's
   * `MONITOR-EVENT usage-error` (or its JSON form); gather prints nothing there, as its original.
   */
  usageEvent?: (json: boolean, message: string) => void;
  /** What is missing when no operand was given, e.g. `<state-dir>`. */
  operandName: string;
  /** Read the settings from the environment (throws CliError). */
  settings: () => Settings;
  /** Runs once the command line and settings are good, before `create` (to open a live view). */
  prepare?: () => Promise<void>;
  create: (args: ParsedArgs, settings: Settings) => Run;
  add: (run: Run, operand: string, fromStateDirLine: boolean) => void;
  /** Runs after the watch ends, before the exit code is set (to clear a live view). */
  finish?: () => void;
  /** Writes one stderr message line (default: straight to stderr; a live view puts it above itself). */
  note?: (line: string) => void;
}

/**
 * Whether a command line that did not parse still asked for --json: kit's parse of it without the
 * offending word (`--json --bogus`), so the usage-error event on stdout is in the form asked for.
 */
function jsonDespiteMistake(argv: readonly string[], spec: BinSpec, error: unknown): boolean {
  if (!(error instanceof ArgvError) || error.word === '') return false;
  try {
    const parsed = parseArgv(spec, argv.filter((word) => word !== error.word));
    return parsed.kind === 'run' && parsed.options['json'] === true;
  } catch {
    return false;
  }
}

/**
 * The shared shape of both bins: options, help and version, operands from argv or stdin, the
 * watch, the exit code. A failure is thrown to kit's one catch (commandMain in each bin's main,
 * runBin at its shim): a CliError is one line and its own exit code, anything else one line and 70.
 */
export async function runWatchCli<Settings, Run extends WatchLoop>(
  argv: readonly string[],
  cli: WatchCli<Settings, Run>,
): Promise<void> {
  const note = cli.note ?? ((line: string) => process.stderr.write(`${line}\n`));
  let json = false;
  try {
    const args = parseArgs(argv, cli.spec);
    json = args.json;
    if (args.help) {
      process.stdout.write(renderHelp(cli.spec));
      return;
    }
    if (args.version) {
      writeLine(packageVersion(new URL('../package.json', import.meta.url)));
      return;
    }
    const settings = cli.settings();
    if (!args.stdin && args.operands.length === 0) throw usageMistake(cli.spec, `need at least one ${cli.operandName}`);
    await cli.prepare?.();
    const run = cli.create(args, settings);
    if (args.stdin) {
      let count = 0;
      run.onStop(
        readStdinOperands(
          process.stdin,
          (operand, fromStateDirLine) => {
            count += 1;
            cli.add(run, operand, fromStateDirLine);
          },
          () => {
            if (count > 0) {
              run.endOperands();
              return;
            }
            run.stop(EXIT_USAGE);
            const mistake = usageMistake(cli.spec, `no ${cli.operandName} on stdin`);
            cli.usageEvent?.(args.json, mistake.message);
            process.stderr.write(formatCliError(cli.spec.name, mistake));
            process.exitCode = EXIT_USAGE;
          },
          (notice) => note(`${cli.spec.name}: ${stdinNoticeText(notice)}`),
        ),
      );
    } else {
      for (const operand of args.operands) cli.add(run, operand, false);
      run.endOperands();
    }
    const code = await run.finished;
    cli.finish?.();
    if (process.exitCode === undefined) process.exitCode = code;
  } catch (error) {
    // Not a catch of its own: a usage error's stdout side (monitor's event), then the error goes on
    // to kit's one catch, which prints its line and sets its exit code.
    if (error instanceof CliError && error.exitCode === EXIT_USAGE) cli.usageEvent?.(json || jsonDespiteMistake(argv, cli.spec, error), error.message);
    throw error;
  }
}
