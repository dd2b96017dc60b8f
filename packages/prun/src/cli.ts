import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { relative, resolve } from 'node:path';
import { CliError, closeDebuggerDoor, endProcess, formatCliError, STOP_SIGNALS } from '@prun/kit/cli';
import { MONITOR_ENV, isAgentCaller, readSecondsSetting } from '@prun/monitor';
import { parseArgv, renderHelp } from '@prun/kit/spec';
import { z } from 'zod';
import { BatchRun, batchPaths, type BatchOutcome } from './batch.js';
import { EXIT } from './errors.js';
import { createBatch, openBatch } from './open.js';
import { throwawayClone } from './clone.js';
import { TOOL_COMMANDS } from './commands.js';
import { completionScript, type Shell } from './completion.js';
import { fullSpec, OWN_SPEC } from './spec.js';
import { batchStatus, renderStatus, renderTable } from './status.js';
import { panelWanted, type LivePanel } from './live/live-panel.js';
import { removeSummary, writeSummary } from './live/watch.js';

const NAME = 'prun';

/** File-system error codes that mean a path or permission the user can fix. */
const PATH_ERRORS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP', 'EEXIST', 'ENOTEMPTY', 'ENOSPC', 'EDQUOT']);

/** prun's own usage errors are kit's one error type (exit 2). */
const UsageError = CliError;

/** The help of prun itself: every command, the fronted bins' summaries from their own declarations. */
async function help(): Promise<string> {
  return renderHelp(await fullSpec());
}

/** `-h`/`--help` or `--version` among a command's words, before any `--`. */
function asked(words: readonly string[], flags: readonly string[]): boolean {
  const end = words.indexOf('--');
  return (end === -1 ? words : words.slice(0, end)).some((word) => flags.includes(word));
}

/** `prun help [COMMAND [SUBCOMMAND...]]`: the help `prun COMMAND ... --help` would print. */
async function runHelp(words: string[]): Promise<number> {
  const [command, ...sub] = words;
  if (command === '-h' || command === '--help') {
    process.stdout.write(renderHelp(OWN_SPEC, ['help']));
    return 0;
  }
  if (command === undefined) {
    process.stdout.write(await help());
    return 0;
  }
  const tool = TOOL_COMMANDS.find((candidate) => candidate.name === command);
  if (tool) {
    await (await tool.load()).main([...sub, '--help']);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  }
  if (OWN_SPEC.commands?.some((own) => own.name === command)) {
    process.stdout.write(renderHelp(OWN_SPEC, [command]));
    return 0;
  }
  throw new UsageError(`unknown command: ${command} (see prun --help)`);
}

function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

const Positive = z.coerce.number().int().positive();
const NonNegative = z.coerce.number().int().nonnegative();

/** Parses one of prun's own commands by its declaration (spec.ts); a mistake is a usage error. */
function parseOwn(command: string, argv: string[]) {
  const parsed = parseArgv(OWN_SPEC, [command, ...argv]);
  // -h/--help and --version were answered before the command ran.
  if (parsed.kind !== 'run') throw new UsageError(`${command}: unexpected ${parsed.kind} request`);
  return parsed;
}

function parseBatchArgs(argv: string[]) {
  const { options: values, positionals } = parseOwn('batch', argv);
  const raw = (name: string): string | undefined => (values[name] === undefined ? undefined : String(values[name]));
  const jobs = values['jobs'] === undefined ? availableParallelism() : Positive.safeParse(raw('jobs'));
  if (typeof jobs !== 'number' && !jobs.success) throw new UsageError(`--jobs must be a positive integer (got: ${raw('jobs')})`);
  const quotaWait = values['quota-wait'] === undefined ? 300 : NonNegative.safeParse(raw('quota-wait'));
  if (typeof quotaWait !== 'number' && !quotaWait.success) {
    throw new UsageError(`--quota-wait must be a non-negative number of seconds (got: ${raw('quota-wait')})`);
  }
  const resume = raw('resume');
  const retryFailed = raw('retry-failed');
  const dir = raw('dir');
  const modes = [positionals.length > 0, resume !== undefined, retryFailed !== undefined].filter(Boolean).length;
  if (modes !== 1) throw new UsageError('batch takes exactly one of PLAN, --resume DIR, or --retry-failed DIR');
  if (dir !== undefined && positionals.length === 0) throw new UsageError('--dir goes with a new plan; --resume and --retry-failed name their directory');
  return {
    plan: positionals[0],
    dir,
    resume,
    retryFailed,
    jobs: typeof jobs === 'number' ? jobs : jobs.data,
    json: values['json'] === true,
    quotaWait: values['no-quota-wait'] !== true,
    quotaWaitMs: (typeof quotaWait === 'number' ? quotaWait : quotaWait.data) * 1000,
  };
}

function renderOutcome(outcome: BatchOutcome): string {
  const rel = (path: string | null): string => (path === null ? '-' : relative(outcome.dir, path) || path);
  const table = renderTable(
    ['UNIT', 'STATUS', 'EXIT', 'RESULT', 'NOTE'],
    outcome.units.map((unit) => [
      unit.id,
      unit.status + (unit.stalled ? '(stalled)' : ''),
      unit.exit_code === null ? '-' : String(unit.exit_code),
      // A unit stopped before its dispatcher got far enough to publish has no result file.
      (existsSync(unit.result_file) ? rel(unit.result_file) : 'missing') +
        (unit.fallback ? ' (FALLBACK)' : '') +
        (unit.quota_fallback ? ` (quota fallback to ${unit.model})` : ''),
      unit.status === 'done' ? '' : (unit.note ?? ''),
    ]),
  );
  const counts = countStatuses(outcome);
  return `${table}\nbatch ${outcome.dir}: ${Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ')} exit=${outcome.exitCode}\n`;
}

function countStatuses(outcome: BatchOutcome): Record<string, number> {
  const counts: Record<string, number> = { done: 0, failed: 0, invalid: 0, interrupted: 0, deferred: 0, queued: 0, running: 0 };
  for (const unit of outcome.units) counts[unit.status] = (counts[unit.status] ?? 0) + 1;
  return counts;
}

async function runBatch(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseBatchArgs(argv);
  // The monitor's own setting, read by its own rules, so both tools agree on what a stall is.
  const [stallName, stallDefault] = MONITOR_ENV.stallThresholdS;
  const stallSeconds = readSecondsSetting(env, stallName, stallDefault);
  const showProgress = process.stderr.isTTY === true && !isAgentCaller(env);
  // A long-lived driver: SIGUSR1 must not open an inspector on it.
  closeDebuggerDoor();
  const cwd = process.cwd();
  // Everything is checked, and the driver lock taken, before the first worker starts; the lock's
  // descriptor stays open for the life of this process.
  const opened =
    args.plan !== undefined ? await createBatch(args.plan, args.dir, env, cwd) : await openBatch(args.resume ?? args.retryFailed!, env, cwd);
  const { paths } = opened;
  if (args.plan !== undefined) process.stderr.write(`${NAME}: batch directory ${paths.dir}\n`);
  if (opened.tornSetAside !== null) {
    process.stderr.write(`${NAME}: the ledger's last line was torn (a crash mid-write); set it aside in ${opened.tornSetAside}\n`);
  }
  // On a person's terminal the live panel (src/live) replaces the progress lines; messages go above it.
  let panel: LivePanel | null = null;
  const run = new BatchRun(paths, opened.units, opened.ledger, {
    jobs: args.jobs,
    quotaWait: args.quotaWait,
    quotaWaitMs: args.quotaWaitMs,
    stallSeconds,
    env,
    progress: (line) => {
      if (showProgress && panel === null) process.stderr.write(`${NAME}: ${line}\n`);
    },
    message: (line) => (panel === null ? process.stderr.write(`${NAME}: ${line}\n`) : panel.message(`${NAME}: ${line}`)),
  });
  run.reconcile(args.retryFailed !== undefined);
  // An earlier run's summary is not this run's: `prun wait` must not take it for this run's end.
  const stale = removeSummary(paths);
  if (stale !== null) process.stderr.write(`${NAME}: ${stale}\n`);
  if (panelWanted(env)) {
    const { LivePanel } = await import('./live/live-panel.js');
    const ids = opened.units.map((unit) => unit.id);
    const shown = relative(cwd, paths.dir);
    panel = await LivePanel.open(
      { dir: shown === '' ? '.' : shown.startsWith('..') ? paths.dir : shown, batchDir: paths.dir, env, stallSeconds, startedAtMs: Date.now(), jobs: args.jobs },
      () => ({ ids, ...run.snapshot() }),
    );
  }
  const signals = STOP_SIGNALS;
  const onSignal = (signal: NodeJS.Signals): void => run.interrupt(signal);
  for (const signal of signals) process.on(signal, onSignal);
  try {
    const outcome = await run.run();
    // The final table takes the panel's place.
    panel?.close();
    panel = null;
    const summary = { dir: outcome.dir, exit_code: outcome.exitCode, stopped_by: outcome.stoppedBy, counts: countStatuses(outcome), units: outcome.units };
    const unwritten = writeSummary(paths, summary);
    if (unwritten !== null) process.stderr.write(`${NAME}: ${unwritten}\n`);
    if (args.json) {
      process.stdout.write(`${JSON.stringify(summary)}\n`);
    } else {
      process.stdout.write(renderOutcome(outcome));
    }
    return outcome.exitCode;
  } finally {
    panel?.close();
    for (const signal of signals) process.off(signal, onSignal);
  }
}

async function runStatus(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { options: values, positionals } = parseOwn('status', argv);
  if (values.watch === true) {
    if (values.json === true) throw new UsageError('status: --watch and --json do not go together (prun wait DIR --json prints the final summary)');
    return (await import('./live/commands.js')).runStatusWatch(positionals[0]!, env);
  }
  const dir = resolve(positionals[0]!);
  const status = batchStatus(dir);
  for (const warning of status.warnings) process.stderr.write(`${NAME}: ${warning}\n`);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ dir: batchPaths(dir).dir, driver_pid: status.driverPid, units: status.units })}\n`
      : `${status.driverPid === null ? '' : `driven by prun pid ${status.driverPid}\n`}${renderStatus(status.units)}`,
  );
  return 0;
}

function runClone(argv: string[]): number {
  const { positionals } = parseOwn('clone', argv);
  process.stdout.write(`${throwawayClone(positionals[0]!, positionals[1]!)}\n`);
  return 0;
}

async function runCompletion(argv: string[]): Promise<number> {
  const shell = parseOwn('completion', argv).positionals[0] as Shell;
  process.stdout.write(await completionScript(shell));
  return 0;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h') {
      process.stdout.write(await help());
      process.exitCode = command === undefined ? 2 : 0;
      return;
    }
    if (command === 'help') {
      process.exitCode = await runHelp(rest);
      return;
    }
    if (command === '--version') {
      process.stdout.write(`${version()}\n`);
      return;
    }
    const tool = TOOL_COMMANDS.find((candidate) => candidate.name === command);
    if (tool) {
      const loaded = await tool.load();
      await loaded.main(rest);
      // A tool whose exit code must hold against a late signal (the dispatcher) ends at its bin
      // edge once its output is flushed; prun hosting it is that edge.
      if ((loaded as { exitWhenDone?: boolean }).exitWhenDone === true) await endProcess();
      return;
    }
    // Every command of prun's own answers -h/--help and --version, whatever else is on the line.
    if (OWN_SPEC.commands?.some((own) => own.name === command)) {
      if (asked(rest, ['-h', '--help'])) {
        process.stdout.write(renderHelp(OWN_SPEC, [command]));
        return;
      }
      if (asked(rest, ['--version'])) {
        process.stdout.write(`${version()}\n`);
        return;
      }
    }
    switch (command) {
      case 'batch':
        process.exitCode = await runBatch(rest, env);
        return;
      case 'status':
        process.exitCode = await runStatus(rest, env);
        return;
      case 'wait': {
        const { options, positionals } = parseOwn('wait', rest);
        process.exitCode = await (await import('./live/commands.js')).runWait(positionals[0]!, options.json === true);
        return;
      }
      case 'log': {
        const { options, positionals } = parseOwn('log', rest);
        process.exitCode = await (await import('./live/commands.js')).runLog(positionals[0]!, positionals[1]!, { follow: options.follow === true, raw: options.raw === true });
        return;
      }
      case 'clean': {
        const { options, positionals } = parseOwn('clean', rest);
        const flags = { dryRun: options['dry-run'] === true, snapshot: options['snapshot'] === true, clones: options['clones'] === true, json: options['json'] === true };
        const warn = (line: string): void => void process.stderr.write(`${NAME}: ${line}\n`);
        process.exitCode = await (await import('./clean.js')).runClean(positionals[0]!, flags, env, process.cwd(), warn);
        return;
      }
      case 'clone':
        process.exitCode = runClone(rest);
        return;
      case 'completion':
        process.exitCode = await runCompletion(rest);
        return;
      default:
        throw new UsageError(`unknown command: ${command} (see prun --help)`);
    }
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException | undefined)?.code;
    const isArgError = errno?.startsWith('ERR_PARSE_ARGS') === true;
    // A permission or path problem is the user's to fix, not a bug: a usage error naming it.
    const isPathError = errno !== undefined && PATH_ERRORS.has(errno);
    if (!(error instanceof CliError) && !isArgError && !isPathError) throw error; // runBin's one catch: internal error, 70
    // kit's one formatting of a known error (its hint line too, as the bins print it).
    process.stderr.write(error instanceof CliError ? formatCliError(NAME, error) : `${NAME}: ${(error as Error).message}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : EXIT.usage;
  }
}
