import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { relative, resolve } from 'node:path';
import { CliError, closeDebuggerDoor, endProcess, packageVersion, printable, signalExitCode, STOP_SIGNALS } from '@prun/kit/cli';
import { MONITOR_ENV, isAgentCaller, readSecondsSetting } from '@prun/monitor';
import { answerHelpOrVersion, parseArgv, renderHelp, unknownCommand, type ParsedArgv } from '@prun/kit/spec';
import { z } from 'zod';
import { BatchRun, batchPaths, type BatchOutcome } from './batch.js';
import { EXIT } from './errors.js';
import { checkNewBatch, createBatch, openBatch } from './open.js';
import { HOOK_TIMEOUT_SETTING, unitDoneHook } from './on-unit-done.js';
import { throwawayClone } from './clone.js';
import { TOOL_COMMANDS } from './commands.js';
import { completionScript, type Shell } from './completion.js';
import { fullSpec, OWN_SPEC } from './spec.js';
import { batchStatus, renderStatus, renderTable } from './status.js';
import { panelWanted, type LivePanel } from './live/live-panel.js';
import { removeSummary, writeSummary } from './live/watch.js';
import { parseHalt, type HaltRule } from './halt.js';
import { liveLockHolder } from './lock.js';
import { resolveBatchDir } from './ledger.js';
import { refuseJobsBeyondOpenFiles } from './supervise/limits.js';

const NAME = 'prun';

/** One line of prun's own on stderr. Paths and ids in it come from the user or the disk, so control
 * characters are shown escaped: a hostile directory name must not clear the screen or set the title. */
const stderrLine = (line: string): void => void process.stderr.write(`${NAME}: ${printable(line)}\n`);

/** prun's own usage errors are kit's one error type (exit 2). */
const UsageError = CliError;

/** The help of prun itself: every command, the fronted bins' summaries from their own declarations. */
async function help(): Promise<string> {
  return renderHelp(await fullSpec());
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
  throw unknownCommand(OWN_SPEC, command);
}

const MANIFEST = new URL('../package.json', import.meta.url);

function version(): string {
  return packageVersion(MANIFEST);
}

const Positive = z.coerce.number().int().positive();
const NonNegative = z.coerce.number().int().nonnegative();

/** One of prun's own command lines, parsed by its declaration (spec.ts); -h/--help and --version were answered. */
type OwnArgs = Extract<ParsedArgv, { kind: 'run' }>;

function parseBatchArgs({ options: values, positionals }: OwnArgs) {
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
  const dryRun = values['dry-run'] === true;
  if (dryRun && positionals.length === 0) throw new UsageError('--dry-run goes with a new plan (prun batch PLAN --dry-run)');
  const retries = values['retries'] === undefined ? 0 : NonNegative.safeParse(raw('retries'));
  if (typeof retries !== 'number' && !retries.success) throw new UsageError(`--retries must be a non-negative whole number (got: ${raw('retries')})`);
  let halt: HaltRule | null = null;
  if (values['halt'] !== undefined) {
    try {
      halt = parseHalt(raw('halt')!);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  const onUnitDone = raw('on-unit-done');
  if (onUnitDone !== undefined && onUnitDone.trim() === '') throw new UsageError('--on-unit-done must not be empty');
  return {
    dryRun,
    retries: typeof retries === 'number' ? retries : retries.data,
    halt,
    onUnitDone: onUnitDone ?? null,
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
  // `cancelled=N` only when a unit was cancelled, so the line is as it always was otherwise.
  const shown = Object.entries(counts).filter(([key, value]) => key !== 'cancelled' || value > 0);
  return `${table}\nbatch ${outcome.dir}: ${shown.map(([k, v]) => `${k}=${v}`).join(' ')} exit=${outcome.exitCode}\n`;
}

function countStatuses(outcome: BatchOutcome): Record<string, number> {
  const counts: Record<string, number> = { done: 0, failed: 0, invalid: 0, interrupted: 0, deferred: 0, queued: 0, running: 0, cancelled: 0 };
  for (const unit of outcome.units) counts[unit.status] = (counts[unit.status] ?? 0) + 1;
  return counts;
}

async function runBatch(parsed: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
  const args = parseBatchArgs(parsed);
  // The monitor's own setting, read by its own rules, so both tools agree on what a stall is.
  const [stallName, stallDefault] = MONITOR_ENV.stallThresholdS;
  const stallSeconds = readSecondsSetting(env, stallName, stallDefault);
  const showProgress = process.stderr.isTTY === true && !isAgentCaller(env);
  // A long-lived driver: SIGUSR1 must not open an inspector on it.
  closeDebuggerDoor();
  const hookTimeoutS = args.onUnitDone === null ? 0 : readSecondsSetting(env, ...HOOK_TIMEOUT_SETTING);
  const cwd = process.cwd();
  if (args.dryRun) return runDryRun(args.plan!, args.dir, env, cwd, args.json);
  // Everything is checked, and the driver lock taken, before the first worker starts; the lock's
  // descriptor stays open for the life of this process.
  const opened =
    args.plan !== undefined ? await createBatch(args.plan, args.dir, env, cwd, { jobs: args.jobs }) : await openBatch(args.resume ?? args.retryFailed!, env, cwd);
  // A resumed batch is checked once open (nothing runs yet; the lock goes with this process).
  if (args.plan === undefined) refuseJobsBeyondOpenFiles(args.jobs, opened.units.length);
  const { paths } = opened;
  if (args.plan !== undefined) stderrLine(`batch directory ${paths.dir}`);
  if (opened.tornSetAside !== null) {
    stderrLine(`the ledger's last line was torn (a crash mid-write); set it aside in ${opened.tornSetAside}`);
  }
  // On a person's terminal the live panel (src/live) replaces the progress lines; messages go above it.
  let panel: LivePanel | null = null;
  const say = (line: string): void => {
    if (panel === null) stderrLine(line);
    else panel.message(`${NAME}: ${printable(line)}`);
  };
  const hook = args.onUnitDone === null ? null : unitDoneHook(args.onUnitDone, { env, cwd, batchDir: paths.dir, timeoutS: hookTimeoutS, message: say });
  const run = new BatchRun(paths, opened.units, opened.ledger, {
    retries: args.retries,
    halt: args.halt,
    ...(hook === null ? {} : { onSettled: hook.run }),
    jobs: args.jobs,
    quotaWait: args.quotaWait,
    quotaWaitMs: args.quotaWaitMs,
    stallSeconds,
    env,
    progress: (line) => {
      if (showProgress && panel === null) stderrLine(line);
    },
    message: say,
  });
  run.reconcile(args.retryFailed !== undefined);
  // An earlier run's summary is not this run's: `prun wait` must not take it for this run's end.
  const stale = removeSummary(paths);
  if (stale !== null) stderrLine(stale);
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
  const onSignal = (signal: NodeJS.Signals): void => {
    run.interrupt(signal);
    hook?.stop(signal);
  };
  for (const signal of signals) process.on(signal, onSignal);
  try {
    let outcome = await run.run();
    await hook?.drained();
    // A signal while only hooks were left still ends the batch as an interrupted one.
    const lateSignal = hook?.stoppedBy() ?? null;
    if (lateSignal !== null && (outcome.stoppedBy === 'finished' || outcome.stoppedBy === 'quota' || outcome.stoppedBy === 'halt')) {
      outcome = { ...outcome, exitCode: signalExitCode(lateSignal), stoppedBy: lateSignal };
    }
    // The final table takes the panel's place.
    panel?.close();
    panel = null;
    const summary = { dir: outcome.dir, exit_code: outcome.exitCode, stopped_by: outcome.stoppedBy, counts: countStatuses(outcome), units: outcome.units };
    const unwritten = writeSummary(paths, summary);
    if (unwritten !== null) stderrLine(unwritten);
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

async function runDryRun(plan: string, dir: string | undefined, env: NodeJS.ProcessEnv, cwd: string, json: boolean): Promise<number> {
  const now = new Date();
  // The very checks a real run makes before it creates anything; then only reading.
  const { units, target } = checkNewBatch(plan, dir, env, cwd, now);
  const { planSchedule, readSnapshotNow, renderDryRun } = await import('./dry-run.js');
  const schedule = planSchedule(units, target, env, await readSnapshotNow(env, now.getTime()));
  process.stdout.write(json ? `${JSON.stringify({ dry_run: true, ...schedule })}\n` : renderDryRun(schedule, plan));
  return EXIT.ok;
}

async function runCancel({ positionals }: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
  const [dir, ...ids] = positionals as [string, ...string[]];
  const message = (line: string): void => {
    stderrLine(line);
  };
  const { cancelUnits, renderCancel } = await import('./cancel.js');
  const reports = await cancelUnits(dir, ids, { env, cwd: process.cwd(), message });
  process.stdout.write(renderCancel(reports, liveLockHolder(batchPaths(resolve(dir)).lock)));
  return EXIT.ok;
}

async function runStatus({ options: values, positionals }: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
  if (values.watch === true) {
    if (values.json === true) throw new UsageError('status: --watch and --json do not go together (prun wait DIR --json prints the final summary)');
    return (await import('./live/commands.js')).runStatusWatch(positionals[0]!, env);
  }
  const dir = resolveBatchDir(positionals[0]!, process.cwd());
  const status = batchStatus(dir);
  for (const warning of status.warnings) stderrLine(warning);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ dir: batchPaths(dir).dir, driver_pid: status.driverPid, units: status.units })}\n`
      : `${status.driverPid === null ? '' : `driven by prun pid ${status.driverPid}\n`}${renderStatus(status.units, status.endedUnwatched)}`,
  );
  return 0;
}

function runClone({ positionals }: OwnArgs): number {
  process.stdout.write(`${throwawayClone(positionals[0]!, positionals[1]!)}\n`);
  return 0;
}

async function runCompletion({ positionals }: OwnArgs): Promise<number> {
  const shell = positionals[0] as Shell;
  process.stdout.write(await completionScript(shell));
  return 0;
}

/**
 * prun's command line. Errors are not caught here: they reach kit's one catch (runBin, bin/prun.js),
 * a CliError with its own exit code, anything else an internal error (70).
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const [command, ...rest] = argv;
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
  if (!OWN_SPEC.commands?.some((own) => own.name === command)) {
    // `prun --bogus` is an unknown option (kit's parser says so), `prun bogus` an unknown command.
    if (command.startsWith('-')) parseArgv(OWN_SPEC, [command]);
    throw unknownCommand(OWN_SPEC, command);
  }
  // Every command of prun's own answers -h/--help and --version, as its declaration's parse says.
  const parsed = parseArgv(OWN_SPEC, argv);
  if (answerHelpOrVersion(OWN_SPEC, parsed, MANIFEST)) return;
  if (parsed.kind !== 'run') return;
  const { options, positionals } = parsed;
  switch (command) {
    case 'batch':
      process.exitCode = await runBatch(parsed, env);
      return;
    case 'status':
      process.exitCode = await runStatus(parsed, env);
      return;
    case 'wait':
      process.exitCode = await (await import('./live/commands.js')).runWait(positionals[0]!, options.json === true);
      return;
    case 'log':
      process.exitCode = await (await import('./live/commands.js')).runLog(positionals[0]!, positionals[1]!, { follow: options.follow === true, raw: options.raw === true });
      return;
    case 'cancel':
      process.exitCode = await runCancel(parsed, env);
      return;
    case 'clean': {
      const flags = { dryRun: options['dry-run'] === true, snapshot: options['snapshot'] === true, clones: options['clones'] === true, json: options['json'] === true };
      const warn = (line: string): void => void stderrLine(line);
      process.exitCode = await (await import('./clean.js')).runClean(positionals[0]!, flags, env, process.cwd(), warn);
      return;
    }
    case 'clone':
      process.exitCode = runClone(parsed);
      return;
    case 'completion':
      process.exitCode = await runCompletion(parsed);
      return;
  }
}
