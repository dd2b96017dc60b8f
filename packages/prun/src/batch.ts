import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { constants as osConstants } from 'node:os';
import { classifyUnit, initialMemory, observeUnit, probeDispatch, type UnitMemory } from '@prun/monitor';
import { publishAtomic, renderFallback } from '@prun/unit-state';
import { throwawayClone, CloneError } from './clone.js';
import { appendLedger, readLedger, type LedgerEntry, type UnitStatus } from './ledger.js';
import { loadPlan, PlanError, type ResolvedUnit } from './plan.js';
import { batchExitCode, decide, quotaRetryTime } from './schedule.js';
import {
  fallbackReason,
  hasConversation,
  findDispatcherFor,
  isDispatcherFor,
  isQuotaBlock,
  isRunning,
  readResultHead,
  stateDirFromLog,
} from './units.js';

/** The files and folders of a batch directory. */
export function batchPaths(dir: string) {
  return {
    dir,
    plan: join(dir, 'plan.json'),
    ledger: join(dir, 'ledger.jsonl'),
    prompts: join(dir, 'prompts'),
    results: join(dir, 'results'),
    clones: join(dir, 'clones'),
    logs: join(dir, 'logs'),
    prompt: (id: string) => join(dir, 'prompts', `${id}.md`),
    result: (id: string) => join(dir, 'results', `${id}.md`),
    clone: (id: string) => join(dir, 'clones', id),
    stdoutLog: (id: string) => join(dir, 'logs', `${id}.stdout`),
    stderrLog: (id: string) => join(dir, 'logs', `${id}.stderr`),
  };
}
export type BatchPaths = ReturnType<typeof batchPaths>;

export class BatchError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'BatchError';
  }
}

export interface BatchSettings {
  jobs: number;
  /** Wait out quota refusals (default); false stops the batch with 75 on the first one. */
  quotaWait: boolean;
  /** How long to wait when a refusal names no reset time. */
  quotaWaitMs: number;
  /** No tail growth for this long reports a stall. */
  stallSeconds: number;
  env: NodeJS.ProcessEnv;
  /** Progress lines (only on a TTY); messages such as stalls and failures always go to `message`. */
  progress: (line: string) => void;
  message: (line: string) => void;
}

export interface UnitReport {
  id: string;
  status: UnitStatus;
  exit_code: number | null;
  model: string | null;
  result_file: string;
  state_dir: string | null;
  started_at: string | null;
  ended_at: string | null;
  fallback: boolean;
  note: string | null;
  stalled: boolean;
}

export interface BatchOutcome {
  dir: string;
  exitCode: number;
  stoppedBy: 'finished' | 'quota' | NodeJS.Signals;
  units: UnitReport[];
}

const nowIso = (): string => new Date().toISOString();

function dispatcherBin(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('@prun/dispatcher-agy/package.json');
  const manifest = require(manifestPath) as { bin: Record<string, string> };
  return resolve(dirname(manifestPath), manifest.bin['prun-dispatch-agy']!);
}

/** Lay out a new batch directory from a plan: plan.json, prompts, and a queued ledger line each. */
export function createBatch(planPath: string, dir: string): BatchPaths {
  const { units } = loadPlan(planPath);
  const paths = batchPaths(resolve(dir));
  if (existsSync(paths.dir) && readdirSync(paths.dir).length > 0) {
    throw new BatchError(`batch directory already exists and is not empty; use --resume to continue it: ${paths.dir}`, 2);
  }
  for (const folder of [paths.dir, paths.prompts, paths.results, paths.clones, paths.logs]) mkdirSync(folder, { recursive: true });
  // plan.json is self-contained: prompts are copied in, paths made absolute, so --resume needs
  // nothing but the batch directory.
  const stored = {
    units: units.map((unit) => ({
      id: unit.id,
      prompt_file: relative(paths.dir, paths.prompt(unit.id)),
      ...(unit.mode ? { mode: unit.mode } : {}),
      ...(unit.addDirs.length > 0 ? { add_dirs: unit.addDirs } : {}),
      ...(unit.clone ? { clone: unit.clone } : {}),
      ...(unit.model ? { model: unit.model } : {}),
      ...(unit.dependsOn.length > 0 ? { depends_on: unit.dependsOn } : {}),
    })),
  };
  for (const unit of units) publishAtomic(paths.prompt(unit.id), unit.prompt, { tag: 'prun' });
  publishAtomic(paths.plan, `${JSON.stringify(stored, null, 2)}\n`, { tag: 'prun' });
  for (const unit of units) appendLedger(paths.ledger, baseEntry(paths, unit, 'queued'));
  return paths;
}

function baseEntry(paths: BatchPaths, unit: ResolvedUnit, status: UnitStatus): LedgerEntry {
  return {
    id: unit.id,
    status,
    model: unit.model,
    mode: unit.mode ?? (unit.clone ? 'accept-edits' : null),
    prompt_file: paths.prompt(unit.id),
    clone_dir: unit.clone ? paths.clone(unit.id) : null,
    result_file: paths.result(unit.id),
    state_dir: null,
    started_at: null,
    ended_at: null,
    exit_code: null,
    attempt: 0,
  };
}

interface Live {
  child: ChildProcess | null;
  pid: number;
  /** The monitor library's memory of this unit's tail growth. */
  memory: UnitMemory;
  stallReported: boolean;
}

/** Runs a batch directory to the end: dispatch, defer, adopt, stop on signal. */
export class BatchRun {
  private readonly units: ResolvedUnit[];
  private readonly byId: Map<string, ResolvedUnit>;
  private readonly latest = new Map<string, LedgerEntry>();
  private readonly live = new Map<string, Live>();
  private readonly continueFrom = new Map<string, string>();
  private readonly stalled = new Set<string>();
  private readonly bin = dispatcherBin();
  private stopping: 'quota' | NodeJS.Signals | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly paths: BatchPaths,
    private readonly settings: BatchSettings,
  ) {
    if (!existsSync(paths.plan)) throw new BatchError(`not a batch directory (no plan.json): ${paths.dir}`, 2);
    try {
      this.units = loadPlan(paths.plan).units;
    } catch (error) {
      if (error instanceof PlanError) throw new BatchError(`${paths.plan}: ${error.message}`, 2);
      throw error;
    }
    this.byId = new Map(this.units.map((unit) => [unit.id, unit]));
    const ledger = readLedger(paths.ledger);
    if (ledger.badLines.length > 0) {
      settings.message(`skipped unreadable ledger lines ${ledger.badLines.join(', ')} in ${paths.ledger}`);
    }
    for (const unit of this.units) {
      this.latest.set(unit.id, ledger.latest.get(unit.id) ?? baseEntry(paths, unit, 'queued'));
    }
  }

  private record(id: string, patch: Partial<LedgerEntry>): LedgerEntry {
    const entry: LedgerEntry = { ...this.latest.get(id)!, ...patch };
    if (patch.note === undefined) delete entry.note;
    if (patch.retry_at === undefined) delete entry.retry_at;
    if (patch.dispatcher_pid === undefined) delete entry.dispatcher_pid;
    appendLedger(this.paths.ledger, entry);
    this.latest.set(id, entry);
    return entry;
  }

  /**
   * Bring the ledger in line with the world after a crash or a kill: adopt dispatchers that are
   * still running, settle units whose dispatcher finished while nobody watched, and queue again
   * only units whose dispatch left no result at all. With `retryFailed`, failed units go back to
   * the queue, as follow-up turns where their conversation can be continued.
   */
  reconcile(retryFailed: boolean): void {
    for (const unit of this.units) {
      const entry = this.latest.get(unit.id)!;
      if (entry.status === 'running') {
        const stateDir = entry.state_dir ?? stateDirFromLog(this.paths.stdoutLog(unit.id));
        // A `running` line is written before the dispatcher starts, so a batch killed in
        // between leaves no pid: look for the dispatcher by its result path instead.
        const resultPath = this.paths.result(unit.id);
        const recorded = entry.dispatcher_pid !== undefined && isDispatcherFor(entry.dispatcher_pid, resultPath) ? entry.dispatcher_pid : null;
        const pid = recorded ?? findDispatcherFor(resultPath);
        if (pid !== null) {
          this.live.set(unit.id, { child: null, pid, memory: initialMemory(Date.now()), stallReported: false });
          this.record(unit.id, { state_dir: stateDir, dispatcher_pid: pid, note: 'adopted a dispatch still running from an earlier batch process' });
          continue;
        }
        this.settleFromResult(unit.id, stateDir, null, 'settled after restart from the published result');
      }
    }
    if (!retryFailed) return;
    for (const unit of this.units) {
      const entry = this.latest.get(unit.id)!;
      if (entry.status !== 'failed') continue;
      if (entry.state_dir && hasConversation(entry.state_dir)) this.continueFrom.set(unit.id, entry.state_dir);
      this.record(unit.id, { status: 'queued', ended_at: null, exit_code: null, note: this.continueFrom.has(unit.id) ? `retry as a follow-up turn of ${entry.state_dir}` : 'retry' });
    }
  }

  /** Decide a unit's end from its result file alone (its exit code is unknown). */
  private settleFromResult(id: string, stateDir: string | null, exitCode: number | null, note: string): void {
    const head = readResultHead(this.paths.result(id));
    if (head === null) {
      this.record(id, { status: 'queued', state_dir: stateDir, note: 'previous dispatch ended without a result; dispatching again' });
      return;
    }
    if (head !== 'unparsed' && head.fallback) {
      const reason = fallbackReason(head);
      if (isQuotaBlock(reason)) {
        this.defer(id, stateDir, exitCode ?? 75, reason);
        return;
      }
      this.record(id, { status: 'failed', state_dir: stateDir, ended_at: nowIso(), exit_code: exitCode, note: `${note}: ${reason}` });
      return;
    }
    this.record(id, { status: 'done', state_dir: stateDir, ended_at: nowIso(), exit_code: exitCode, note });
  }

  private defer(id: string, stateDir: string | null, exitCode: number, reason: string): void {
    const now = Date.now();
    const retryAt = quotaRetryTime(reason, now) ?? now + this.settings.quotaWaitMs;
    this.record(id, {
      status: 'deferred',
      state_dir: stateDir,
      ended_at: nowIso(),
      exit_code: exitCode,
      retry_at: new Date(retryAt).toISOString(),
      note: reason,
    });
    if (!this.settings.quotaWait) {
      this.settings.message(`unit ${id} refused on quota (${reason}); stopping the batch (--no-quota-wait)`);
      this.stopping ??= 'quota';
    } else {
      this.settings.message(`unit ${id} deferred on quota until ${new Date(retryAt).toISOString()}: ${reason}`);
    }
  }

  /** Where the previous attempt's result goes so the dispatcher gets a fresh path. */
  private setAsidePreviousResult(id: string, attempt: number): void {
    const current = this.paths.result(id);
    if (!existsSync(current)) return;
    let n = attempt;
    let aside = join(this.paths.results, `${id}.attempt-${n}.md`);
    while (existsSync(aside)) {
      n += 1;
      aside = join(this.paths.results, `${id}.attempt-${n}.md`);
    }
    renameSync(current, aside);
  }

  private failWithoutRun(id: string, reason: string): void {
    const result = this.paths.result(id);
    if (readResultHead(result) === null) publishAtomic(result, renderFallback({ unitId: id, reason }), { tag: 'prun' });
    this.record(id, { status: 'failed', ended_at: nowIso(), exit_code: null, note: reason });
    this.settings.message(`unit ${id} failed without running: ${reason}`);
  }

  private start(id: string): void {
    const unit = this.byId.get(id)!;
    const previous = this.latest.get(id)!;
    const attempt = (previous.attempt ?? 0) + 1;
    let cloneDir: string | null = null;
    if (unit.clone) {
      cloneDir = this.paths.clone(id);
      if (!existsSync(cloneDir)) {
        try {
          throwawayClone(unit.clone, cloneDir);
        } catch (error) {
          const why = error instanceof CloneError ? error.message : String(error);
          this.failWithoutRun(id, `could not make the throwaway clone: ${why}`);
          return;
        }
      }
    }
    this.setAsidePreviousResult(id, previous.attempt ?? 0);

    const mode = unit.mode ?? (cloneDir ? 'accept-edits' : null);
    const args = [this.bin, '--prompt-file', this.paths.prompt(id), '--result-file', this.paths.result(id), '--unit-id', id];
    if (mode) args.push('--mode', mode);
    for (const dir of unit.addDirs) args.push('--add-dir', dir);
    const continueFrom = this.continueFrom.get(id);
    if (continueFrom) args.push('--continue-from', continueFrom);
    this.continueFrom.delete(id);

    const env: NodeJS.ProcessEnv = { ...this.settings.env };
    delete env.PRUN_SCRATCH_CWD;
    if (cloneDir) env.PRUN_SCRATCH_CWD = cloneDir;
    if (unit.model) env.ANTIGRAVITY_DISPATCH_MODEL = unit.model;

    // Recorded before the spawn: a batch killed at any point after this line finds the unit
    // `running` on --resume and looks for its dispatcher, so no unit is dispatched twice.
    this.record(id, {
      status: 'running',
      mode,
      clone_dir: cloneDir,
      state_dir: null,
      started_at: nowIso(),
      ended_at: null,
      exit_code: null,
      attempt,
    });
    // The dispatcher's output goes to files, not pipes: a batch killed mid-run must not take
    // its dispatchers down with a broken pipe, and a resumed batch reads their STATE-DIR lines.
    const out = openSync(this.paths.stdoutLog(id), 'a');
    const err = openSync(this.paths.stderrLog(id), 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', out, err], env, cwd: this.paths.dir });
    } finally {
      closeSync(out);
      closeSync(err);
    }
    const pid = child.pid;
    if (pid === undefined) {
      this.failWithoutRun(id, 'could not start the dispatcher');
      return;
    }
    this.live.set(id, { child, pid, memory: initialMemory(Date.now()), stallReported: false });
    this.record(id, { dispatcher_pid: pid });
    this.settings.progress(`started ${id}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
    child.on('exit', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
      this.finish(id, exitCode);
    });
  }

  private finish(id: string, exitCode: number): void {
    this.live.delete(id);
    const stateDir = this.latest.get(id)!.state_dir ?? stateDirFromLog(this.paths.stdoutLog(id));
    if (exitCode === 75) {
      const head = readResultHead(this.paths.result(id));
      const reason = head && head !== 'unparsed' ? fallbackReason(head) : 'quota refused';
      this.defer(id, stateDir, exitCode, reason);
    } else if (exitCode === 0) {
      this.record(id, { status: 'done', state_dir: stateDir, ended_at: nowIso(), exit_code: 0 });
      this.settings.progress(`done ${id}`);
    } else {
      const head = readResultHead(this.paths.result(id));
      const reason = head && head !== 'unparsed' && head.fallback ? fallbackReason(head) : `dispatcher exited with code ${exitCode}`;
      this.record(id, { status: 'failed', state_dir: stateDir, ended_at: nowIso(), exit_code: exitCode, note: reason });
      this.settings.message(`unit ${id} failed (exit ${exitCode}): ${reason}`);
    }
    this.wake?.();
  }

  /** Periodic look at running units: record state dirs as they appear, watch tails for stalls. */
  private observe(): void {
    const now = Date.now();
    for (const [id, live] of this.live) {
      const entry = this.latest.get(id)!;
      if (entry.state_dir === null) {
        const stateDir = stateDirFromLog(this.paths.stdoutLog(id));
        if (stateDir) this.record(id, { state_dir: stateDir, dispatcher_pid: live.pid });
      }
      if (live.child === null && !isRunning(live.pid)) {
        // An adopted dispatcher is not our child: its end shows only as its absence.
        this.live.delete(id);
        this.settleFromResult(id, this.latest.get(id)!.state_dir, null, 'adopted dispatch ended');
        continue;
      }
      const stateDir = this.latest.get(id)!.state_dir;
      if (!stateDir) continue;
      // The monitor's own rules: a stall is a tail that has not grown for the threshold while
      // no result is present. prun reports it and keeps waiting; the dispatcher's deadline
      // bounds the worker. The end of a unit is its dispatcher's exit, not the monitor's view.
      const facts = observeUnit(stateDir, this.paths.dir);
      const seen = classifyUnit(live.memory, facts, () => probeDispatch(stateDir), { stallThresholdS: this.settings.stallSeconds, stableWindowS: 0 }, now);
      live.memory = seen.memory;
      if (seen.status.kind === 'stalled') {
        if (!live.stallReported) {
          live.stallReported = true;
          this.stalled.add(id);
          this.settings.message(`unit ${id} stalled: no output for ${seen.status.seconds}s (state dir ${stateDir})`);
        }
      } else if (seen.status.kind === 'growing' && live.memory.lastGrowthMs === now) {
        live.stallReported = false;
        this.stalled.delete(id);
      }
    }
  }

  /** Stop starting units and pass the signal to every running dispatcher. */
  interrupt(signal: NodeJS.Signals): void {
    if (this.stopping !== null && this.stopping !== 'quota') return;
    this.stopping = signal;
    this.settings.message(`${signal}: stopping ${this.live.size} running unit(s)`);
    for (const live of this.live.values()) {
      try {
        process.kill(live.pid, signal);
      } catch {
        // already gone
      }
    }
    this.wake?.();
  }

  async run(): Promise<BatchOutcome> {
    for (;;) {
      const now = Date.now();
      const status = new Map([...this.latest].map(([id, entry]) => [id, entry.status] as const));
      const retryAt = new Map(
        [...this.latest].filter(([, e]) => e.retry_at).map(([id, e]) => [id, Date.parse(e.retry_at!)] as const),
      );
      const decision = decide({
        units: this.units,
        status,
        retryAt,
        running: this.live.size,
        jobs: this.settings.jobs,
        now,
        startingAllowed: this.stopping === null,
      });
      for (const [id, dep] of decision.failForDependency) this.failWithoutRun(id, `dependency ${dep} failed`);
      if (decision.failForDependency.length > 0) continue;
      for (const id of decision.start) this.start(id);
      if (decision.finished) break;
      const tickMs = 200;
      const waitMs = decision.wakeAt === null ? tickMs : Math.max(0, Math.min(tickMs, decision.wakeAt - now));
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(done, waitMs);
        function done(): void {
          clearTimeout(timer);
          resolveWait();
        }
        this.wake = done;
      });
      this.wake = null;
      this.observe();
    }
    const failed = [...this.latest.values()].filter((entry) => entry.status === 'failed').length;
    let exitCode = batchExitCode(failed);
    let stoppedBy: BatchOutcome['stoppedBy'] = 'finished';
    if (this.stopping === 'quota') {
      exitCode = 75;
      stoppedBy = 'quota';
    } else if (this.stopping !== null) {
      exitCode = 128 + (osConstants.signals[this.stopping] ?? 0);
      stoppedBy = this.stopping;
    }
    return { dir: this.paths.dir, exitCode, stoppedBy, units: this.report() };
  }

  report(): UnitReport[] {
    return this.units.map((unit) => {
      const entry = this.latest.get(unit.id)!;
      const head = readResultHead(this.paths.result(unit.id));
      return {
        id: unit.id,
        status: entry.status,
        exit_code: entry.exit_code,
        model: entry.model,
        result_file: entry.result_file,
        state_dir: entry.state_dir,
        started_at: entry.started_at,
        ended_at: entry.ended_at,
        fallback: head !== null && head !== 'unparsed' && head.fallback,
        note: entry.note ?? null,
        stalled: this.stalled.has(unit.id),
      };
    });
  }
}

/** Default batch directory name: `prun-batch-<UTC timestamp>` in the current directory. */
export function defaultBatchDir(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return resolve(`prun-batch-${stamp}`);
}
