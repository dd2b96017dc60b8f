// `prun batch`: its options, the run with its live panel and hook, and the final table. Loaded only
// when `prun batch` runs (cli.ts routes), so the other commands do not load the driver.
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { CliError, closeDebuggerDoor, printable, signalExitCode, STOP_SIGNALS } from '@prun/kit/cli';
import { MONITOR_ENV, isAgentCaller, readSecondsSetting } from '@prun/monitor';
import { z } from 'zod';
import { BatchRun, type BatchOutcome } from '../batch.js';
import { EXIT } from '../errors.js';
import { checkNewBatch, createBatch, openBatch } from '../open.js';
import { HOOK_TIMEOUT_SETTING, unitDoneHook } from '../on-unit-done.js';
import { renderTable } from '../status.js';
import type { LivePanel } from '../live/live-panel.js';
import { panelWanted } from '../live/wanted.js';
import { removeSummary, writeSummary } from '../live/watch.js';
import { parseHalt, type HaltRule } from '../halt.js';
import { refuseJobsBeyondOpenFiles } from '../supervise/limits.js';
import { NAME, stderrLine, type OwnArgs } from '../stderr.js';

/** prun's own usage errors are kit's one error type (exit 2). */
const UsageError = CliError;

const Positive = z.coerce.number().int().positive();
const NonNegative = z.coerce.number().int().nonnegative();

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

export async function runBatch(parsed: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
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
    const { LivePanel } = await import('../live/live-panel.js');
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
  const { planSchedule, readSnapshotNow, renderDryRun } = await import('../dry-run.js');
  const schedule = planSchedule(units, target, env, await readSnapshotNow(env, now.getTime()));
  process.stdout.write(json ? `${JSON.stringify({ dry_run: true, ...schedule })}\n` : renderDryRun(schedule, plan));
  return EXIT.ok;
}
