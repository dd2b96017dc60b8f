import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { signalExitCode } from '@prun/kit/cli';
import { TIMEOUT_SETTING } from '@prun/dispatcher-agy';
import { classifyUnit, initialMemory, observeUnit, probeDispatch, type UnitMemory } from '@prun/monitor';
import { publishAtomic, renderFallback, resultShapeLines } from '@prun/unit-state';
import { throwawayClone, CloneError } from './clone.js';
import { dispatcherOptions, type DispatchRequest } from './dispatcher.js';
import { EXIT } from './errors.js';
import type { BatchPaths } from './paths.js';
import { appendLedger, syncLedger, type LedgerEntry, type LedgerRead, type UnitStatus } from './ledger.js';
import { countsAgainstBatch, isFailedStatus, supervisorDeathText, unitOutcome, type UnitOutcome } from './outcome.js';
import { clearCancelRequest, pendingCancelRequests, publishStoppedResult } from './cancel-requests.js';
import { haltReached, type HaltRule } from './halt.js';
import { stopRunningUnit, type RunningDispatch } from './stop.js';
import type { ResolvedUnit } from './plan.js';
import { batchExitCode, decide, quotaRetryTime, unitsAhead } from './schedule.js';
import { entryHostedState, hostedState, supervisorOf } from './supervise/alive.js';
import { SupervisorClient, type SupervisorDeath } from './supervise/client.js';
import { withEnvChanges, type EnvChanges } from './supervise/records.js';
import { removeDeadSupervisors } from './supervise/cleanup.js';
import {
  findDispatcherFor,
  hasConversation,
  isDispatcherFor,
  dispatchReason,
  processStartTime,
  readModelFacts,
  readResultHead,
  stateDirFromLog,
} from './units.js';

export { BatchError } from './errors.js';

export { batchPaths, type BatchPaths } from './paths.js';

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
  /** `--retries`: how often a failed or invalid unit is run again automatically (default 0). */
  retries?: number;
  /** `--halt`: stop once this many units failed (default: never). */
  halt?: HaltRule | null;
  /** Called once a unit has settled for this run (done, failed, invalid, cancelled, interrupted). */
  onSettled?: (entry: LedgerEntry) => void;
  /** False: start no unit, only settle what is stopping (how `prun cancel` acts on a batch no driver holds). */
  startUnits?: boolean;
}

export interface UnitReport {
  id: string;
  status: UnitStatus;
  exit_code: number | null;
  /** The model that ran (from the unit's state directory), or the plan's model before it ran. */
  model: string | null;
  /** Whether quota routing fell back to another group's model. */
  quota_fallback: boolean;
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
  stoppedBy: 'finished' | 'quota' | 'halt' | NodeJS.Signals;
  units: UnitReport[];
}

const nowIso = (): string => new Date().toISOString();

/** The ledger line a unit starts with. */
export function queuedEntry(paths: BatchPaths, unit: ResolvedUnit): LedgerEntry {
  return {
    id: unit.id,
    status: 'queued',
    model: unit.model,
    mode: unitMode(unit),
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

/** A unit's dispatcher mode: its own, or accept-edits in its disposable clone. */
export function unitMode(unit: ResolvedUnit): 'plan' | 'accept-edits' | null {
  return unit.mode ?? (unit.clone ? 'accept-edits' : null);
}

/**
 * How a unit's dispatcher environment differs from the batch's (`base`): its clone (a scratch
 * directory the batch's own environment names is never passed on), model and timeout. What a
 * start request carries to the supervisor, whose own environment is the batch's.
 */
export function unitEnvChanges(base: NodeJS.ProcessEnv, unit: ResolvedUnit, cloneDir: string | null): EnvChanges {
  const changes: EnvChanges = {};
  if (cloneDir) changes.PRUN_SCRATCH_CWD = cloneDir;
  else if (base.PRUN_SCRATCH_CWD !== undefined) changes.PRUN_SCRATCH_CWD = null;
  if (unit.model) changes.ANTIGRAVITY_DISPATCH_MODEL = unit.model;
  // The dispatcher's own deadline setting, so its worker is stopped on the dispatcher's path.
  if (unit.timeoutSeconds !== null) changes[TIMEOUT_SETTING] = String(unit.timeoutSeconds);
  return changes;
}

/** The environment a unit's dispatcher gets: the batch's, plus its clone, model and timeout. */
export function unitEnv(base: NodeJS.ProcessEnv, unit: ResolvedUnit, cloneDir: string | null): NodeJS.ProcessEnv {
  return withEnvChanges(base, unitEnvChanges(base, unit, cloneDir));
}

/** The text of the follow-up turn that asks a worker to restate its result in the return contract. */
export function restatePromptText(id: string): string {
  return [
    'Your previous final response did not follow the return contract, so the batch could not accept it.',
    'Do not redo the work. Restate your result as your final response, starting exactly with these lines:',
    '',
    ...resultShapeLines(id),
    '',
  ].join('\n');
}

interface Live {
  /**
   * Who runs the dispatch: `own`, this driver's supervisor (its end comes as a notice); `hosted`,
   * a supervisor an earlier driver started (its end shows in its records); `process`, a
   * dispatcher process of its own, from a prun before supervisors (its end shows as its absence).
   */
  how: 'own' | 'hosted' | 'process';
  pid: number;
  attempt: number;
  start: string | null;
  /** The monitor library's memory of this unit's tail growth. */
  memory: UnitMemory;
  stallReported: boolean;
  /** When `observe` first looks at it (ms since epoch): a unit that ends sooner is never looked at. */
  firstLookAt: number;
  /** The follow-up turn this dispatch runs, if any: queued again with the unit should it end unstarted. */
  followUp?: FollowUp | null;
}

/** A follow-up turn to run instead of a fresh dispatch. */
interface FollowUp {
  stateDir: string;
  restate: boolean;
}

/**
 * How long a ledger line written without its own fsync (a unit's `done`, a state dir) waits for
 * the next fsynced line (normally the next unit's hand-over) before the driver fsyncs it alone:
 * what a power loss can lose of it (README, "The ledger").
 */
const LEDGER_SYNC_WITHIN_MS = 200;

/**
 * How often the driver looks at its running units (state dirs as they appear, stalls, the end of
 * an adopted dispatch): a unit's own end comes as a notice and does not wait for a look.
 */
const OBSERVE_EVERY_MS = 200;

/**
 * How long a unit this driver handed over runs before its first look (its state dir line, its
 * tail watched for stalls): a unit that ends sooner costs no look and no state-dir line of its
 * own. Growth before the first look counts as seen then, so the look comes after at most a
 * quarter of the stall threshold (PRUN_STALL_THRESHOLD) when that is shorter.
 */
function firstLookAfterMs(stallSeconds: number): number {
  return Math.min(1000, stallSeconds * 250);
}

/** How long a unit waits when its dispatcher found an earlier worker still in its directory. */
const BUSY_RETRY_MS = 5000;

/** Ledger fields that describe a live dispatch and go when the unit stops running. */
const LIVE_FIELDS = ['dispatcher_pid', 'dispatcher_start', 'supervised', 'stop_signal', 'stop_reason'] as const;

/** The signal `--halt now` and `prun cancel` stop a unit's dispatcher with (its normal stop path). */
const CONTROL_STOP_SIGNAL: NodeJS.Signals = 'SIGTERM';

/** Moves `current` to `<folder>/<id>.attempt-<n>.<ext>` (the first free n from `attempt`, at least 1), if it exists. */
function setAside(current: string, folder: string, id: string, ext: string, attempt: number): void {
  if (!existsSync(current)) return;
  let n = Math.max(attempt, 1);
  let aside = join(folder, `${id}.attempt-${n}.${ext}`);
  while (existsSync(aside)) {
    n += 1;
    aside = join(folder, `${id}.attempt-${n}.${ext}`);
  }
  renameSync(current, aside);
}

/** Runs a batch directory to the end: dispatch, defer, adopt, stop on signal. */
export class BatchRun {
  private readonly byId: Map<string, ResolvedUnit>;
  private readonly latest = new Map<string, LedgerEntry>();
  private readonly live = new Map<string, Live>();
  private readonly followUps = new Map<string, FollowUp>();
  private readonly stalled = new Set<string>();
  /** Who asked `prun cancel` to stop a running unit, for its note should it end unstarted. */
  private readonly cancelledBy = new Map<string, string>();
  private stopping: 'quota' | 'halt' | NodeJS.Signals | null = null;
  /** Units that failed or were invalid (after their retries) in this run, for `--halt`. */
  private failures = 0;
  private wake: (() => void) | null = null;
  /** This driver's supervisor: started with the first unit, again if it dies. */
  private supervisor: SupervisorClient | null = null;
  /** When the oldest ledger line written with `sync: false` and not fsynced yet was written (see `record`). */
  private unsyncedSince: number | null = null;
  /** When `observe` last looked at the running units. */
  private observedAt = 0;

  /** `units` from the batch's own plan.json; `ledger` read (and its tail repaired) under the driver lock. */
  constructor(
    private readonly paths: BatchPaths,
    private readonly units: ResolvedUnit[],
    ledger: LedgerRead,
    private readonly settings: BatchSettings,
  ) {
    this.byId = new Map(units.map((unit) => [unit.id, unit]));
    for (const unit of units) this.latest.set(unit.id, ledger.latest.get(unit.id) ?? queuedEntry(paths, unit));
  }

  /**
   * Append a unit's next ledger line. `sync: false` (a unit's end, a state dir as it appears) is
   * written at once but fsynced with the next synced line (normally the next unit's hand-over),
   * or once it has waited LEDGER_SYNC_WITHIN_MS for one, or before a hook or the driver's exit,
   * whichever comes first: in a busy batch such lines cost no fsync of their own, and none is on
   * the path from one unit's end to the next unit's hand-over. Every other line is fsynced before
   * this returns (README, "The ledger").
   */
  private record(id: string, patch: Partial<LedgerEntry>, drop: (keyof LedgerEntry)[] = [], options: { sync?: boolean } = {}): LedgerEntry {
    const entry: LedgerEntry = { ...this.latest.get(id)!, ...patch };
    // A note lasts until the unit's status changes, so a running unit keeps its `adopted ...`.
    const stillRunning = patch.status === undefined && entry.status === 'running';
    if (patch.note === undefined && !stillRunning) delete entry.note;
    if (patch.retry_at === undefined) delete entry.retry_at;
    if (entry.status !== 'running') for (const key of LIVE_FIELDS) delete entry[key];
    for (const key of drop) delete entry[key];
    const sync = options.sync !== false;
    appendLedger(this.paths.ledger, entry, undefined, { sync });
    // A synced append flushes every line written before it too.
    this.unsyncedSince = sync ? null : (this.unsyncedSince ?? Date.now());
    this.latest.set(id, entry);
    return entry;
  }

  /** fsync the lines written with `sync: false`, if any: before a hook, after a reconcile, at the driver's end. */
  private syncLedger(): void {
    if (this.unsyncedSince === null) return;
    syncLedger(this.paths.ledger);
    this.unsyncedSince = null;
  }

  /**
   * Before the driver waits: fsync the lines written with `sync: false` once the oldest has
   * waited LEDGER_SYNC_WITHIN_MS for a synced line to carry it. Returns how long the wait may
   * last before they are due (Infinity when none waits).
   */
  private syncLedgerWhenDue(now: number): number {
    if (this.unsyncedSince === null) return Infinity;
    const left = this.unsyncedSince + LEDGER_SYNC_WITHIN_MS - now;
    if (left > 0) return left;
    this.syncLedger();
    return Infinity;
  }

  private adopt(id: string, live: Live, stateDir: string | null): void {
    this.live.set(id, live);
    this.record(id, {
      state_dir: stateDir,
      dispatcher_pid: live.pid,
      ...(live.start === null ? {} : { dispatcher_start: live.start }),
      note: 'adopted a dispatch still running from an earlier batch process',
    });
  }

  /**
   * The live dispatch of a `running` unit no driver of this process started: in the supervisor
   * its ledger line names (running, or handed over and not yet drained), or a dispatcher process
   * of its own (recorded pid and start time, or found in /proc by its `--result-file`, for a
   * ledger written before supervisors, whose `running` line came before the pid). Null when
   * nothing runs it any more.
   */
  private findRunning(id: string, entry: LedgerEntry): Live | null {
    const attempt = entry.attempt ?? 0;
    // An adopted dispatch is looked at from the first step on: its end shows only there.
    const live = (how: Live['how'], pid: number, start: string | null): Live => ({ how, pid, attempt, start, memory: initialMemory(Date.now()), stallReported: false, firstLookAt: 0 });
    const host = supervisorOf(entry);
    if (host !== null) return hostedState(this.paths.dir, host, id, attempt).kind === 'running' ? live('hosted', host.pid, host.start) : null;
    const resultPath = this.paths.result(id);
    if (entry.dispatcher_pid !== undefined && isDispatcherFor(entry.dispatcher_pid, resultPath, entry.dispatcher_start ?? null)) {
      return live('process', entry.dispatcher_pid, entry.dispatcher_start ?? processStartTime(entry.dispatcher_pid));
    }
    const found = findDispatcherFor(resultPath);
    return found === null ? null : live('process', found.pid, found.start);
  }

  /** How `stopRunningUnit` reaches one running unit: its dispatcher process, or its place in a supervisor. */
  private running(id: string, live: Live): RunningDispatch {
    return live.how === 'process' ? { id, pid: live.pid } : { id, pid: live.pid, hosted: { batchDir: this.paths.dir, start: live.start ?? '', attempt: live.attempt } };
  }

  /**
   * Bring the ledger in line with the world after a crash, a kill or an interrupt: adopt
   * dispatchers that are still running (recorded pid and start time, or found by their
   * `--result-file`), settle units whose dispatcher ended while nobody watched, and queue again
   * interrupted units and units whose dispatch left nothing, as follow-up turns where a
   * conversation was recorded. With `retryFailed`, failed and invalid units go back to the queue
   * too; an invalid one is asked to restate its result in the contract.
   */
  reconcile(retryFailed: boolean): void {
    for (const unit of this.units) {
      const entry = this.latest.get(unit.id)!;
      if (entry.status !== 'running') continue;
      const stateDir = entry.state_dir ?? stateDirFromLog(this.paths.stdoutLog(unit.id));
      const found = this.findRunning(unit.id, entry);
      if (found !== null) {
        this.adopt(unit.id, found, stateDir);
        continue;
      }
      const state = entryHostedState(this.paths.dir, entry);
      // A hosted unit that ended while no driver watched has its exit code in its supervisor's record.
      if (state?.kind === 'ended') this.settle(unit.id, state.exitCode, `settled after restart from its supervisor's record (exit ${state.exitCode})`);
      else this.settle(unit.id, null, 'settled after restart from the published result');
    }
    for (const unit of this.units) {
      const entry = this.latest.get(unit.id)!;
      const rerun = entry.status === 'interrupted' || (retryFailed && isFailedStatus(entry.status));
      if (!rerun) continue;
      const how = this.queueFollowUp(unit.id, entry.status === 'invalid');
      const why = entry.status === 'interrupted' ? 'interrupted' : entry.status;
      // A retry by hand starts the unit's automatic retries (--retries) afresh.
      const drop: (keyof LedgerEntry)[] = entry.status === 'interrupted' ? [] : ['retry'];
      this.record(unit.id, { status: 'queued', ended_at: null, exit_code: null, note: `${why}: running again ${how}` }, drop);
    }
    this.syncLedger();
  }

  /**
   * The next dispatch of `id` continues its recorded conversation (asking to restate an invalid
   * result when `restate`), or starts afresh when none was recorded. Returns how, for the note.
   */
  private queueFollowUp(id: string, restate: boolean): string {
    const stateDir = this.latest.get(id)!.state_dir;
    if (stateDir && hasConversation(stateDir)) {
      this.followUps.set(id, { stateDir, restate });
      return `${restate ? 'asking to restate the result' : 'as a follow-up turn'} of ${stateDir}`;
    }
    return 'afresh (no conversation recorded)';
  }

  /** Tell `onSettled` that a unit has reached its end for this run. */
  private settled(id: string): void {
    if (this.settings.onSettled === undefined) return;
    // The hook is a command outside the driver: the line it may act on is on the disk first.
    this.syncLedger();
    this.settings.onSettled(this.latest.get(id)!);
  }

  /**
   * Record a unit's end from its dispatcher's exit (`exitCode`), or from what it left behind when
   * it ended unwatched (`exitCode` null), through the one outcome rule both paths share.
   */
  private settle(id: string, exitCode: number | null, unwatchedNote: string | null = null, hostDeath: string | null = null): void {
    const entry = this.latest.get(id)!;
    const stateDir = entry.state_dir ?? stateDirFromLog(this.paths.stdoutLog(id));
    const result = readResultHead(this.paths.result(id));
    const outcome: UnitOutcome = unitOutcome({
      unitId: id,
      exitCode,
      result,
      stopSignal: entry.stop_signal ?? null,
      stderrLast: result === null ? dispatchReason(this.paths.stderrLog(id), stateDir ?? null) : null,
      cancelled: entry.stop_reason === 'cancel',
      // The rule is not remembered across a restart: then the note says only `--halt`.
      haltedBy: entry.stop_reason === 'halt' ? ['--halt', ...(this.settings.halt ? [this.settings.halt.text] : [])].join(' ') : null,
      retriesLeft: Math.max(0, (this.settings.retries ?? 0) - (entry.retry ?? 0)),
      hostDeath,
    });
    const facts = stateDir ? readModelFacts(stateDir) : null;
    const ran: Partial<LedgerEntry> = facts
      ? {
          ...(facts.model !== null ? { model: facts.model } : {}),
          ...(facts.notes.length > 0 ? { model_notes: facts.notes } : {}),
          quota_fallback: facts.quotaFallback,
        }
      : {};
    const base = { state_dir: stateDir, exit_code: exitCode, ...ran };
    switch (outcome.status) {
      case 'done':
        this.record(id, { ...base, status: 'done', ended_at: nowIso(), ...(unwatchedNote ? { note: unwatchedNote } : {}) }, [], { sync: false });
        this.settings.progress(`done ${id}`);
        this.settled(id);
        break;
      case 'deferred':
        this.defer(id, base, outcome.note, outcome.refusal);
        break;
      case 'queued':
        this.record(id, { ...base, status: 'queued', ended_at: null, note: outcome.note });
        break;
      default: {
        // A unit whose supervisor died published nothing: its FALLBACK says why, as the
        // dispatcher's own would have.
        const diedUnpublished = hostDeath !== null && result === null;
        if (outcome.status === 'cancelled' || diedUnpublished || (outcome.status === 'interrupted' && entry.stop_reason === 'halt' && result !== null)) {
          publishStoppedResult(this.paths.result(id), id, result, outcome.note);
        }
        this.record(id, { ...base, status: outcome.status, ended_at: nowIso(), note: outcome.note });
        const code = exitCode === null ? '' : ` (exit ${exitCode})`;
        this.settings.message(`unit ${id} ${outcome.status}${code}: ${outcome.note}`);
        if ((outcome.status === 'failed' || outcome.status === 'invalid') && outcome.retry) {
          this.retry(id, outcome.status);
          break;
        }
        this.settled(id);
        if (outcome.status === 'failed' || outcome.status === 'invalid') this.countFailure();
      }
    }
    this.wake?.();
  }

  /** `--retries`: queue a failed or invalid unit again at once, as a follow-up turn where one was recorded. */
  private retry(id: string, status: 'failed' | 'invalid'): void {
    const retry = (this.latest.get(id)!.retry ?? 0) + 1;
    const how = this.queueFollowUp(id, status === 'invalid');
    const note = `${status}: retry ${retry} of ${this.settings.retries ?? 0} (--retries), ${how}`;
    this.record(id, { status: 'queued', ended_at: null, exit_code: null, retry, note });
    this.settings.message(`unit ${id} ${note}`);
  }

  /** A unit failed for good in this run: `--halt` may stop the batch. */
  private countFailure(): void {
    this.failures += 1;
    const rule = this.settings.halt;
    if (!rule || this.stopping === 'halt' || !haltReached(rule, this.failures, this.units.length)) return;
    const signalled = this.stopping !== null && this.stopping !== 'quota';
    if (!signalled) this.stopping = 'halt';
    if (rule.when === 'soon') {
      this.settings.message(`--halt ${rule.text}: ${this.failures} unit(s) failed; starting no more units, ${this.live.size} running unit(s) finish`);
      return;
    }
    this.settings.message(`--halt ${rule.text}: ${this.failures} unit(s) failed; stopping ${this.live.size} running unit(s)`);
    for (const [id, live] of this.newestFirst()) {
      if (!signalled) this.record(id, { stop_signal: CONTROL_STOP_SIGNAL, stop_reason: 'halt' });
      stopRunningUnit(this.running(id, live), CONTROL_STOP_SIGNAL);
    }
  }


  /**
   * `prun cancel`: a running unit is stopped through its dispatcher (recorded first, so its end
   * is `cancelled` even if this process dies meanwhile); a queued, deferred or interrupted unit is
   * recorded `cancelled` at once, with a FALLBACK naming the cancel. A unit that has already
   * settled is left as it is. Returns what was done.
   */
  cancel(id: string, by: string): 'stopping' | 'cancelled' | 'settled' {
    const entry = this.latest.get(id);
    if (entry === undefined) return 'settled';
    if (entry.status === 'running') {
      let live = this.live.get(id);
      if (live === undefined) {
        // No driver watched it (prun cancel on a batch no driver holds): find its dispatcher.
        live = this.findRunning(id, entry) ?? undefined;
        if (live !== undefined) this.live.set(id, live);
      }
      if (entry.stop_reason === 'cancel' && live !== undefined) return 'stopping';
      this.record(id, {
        stop_signal: CONTROL_STOP_SIGNAL,
        stop_reason: 'cancel',
        ...(live === undefined ? {} : { dispatcher_pid: live.pid, ...(live.start === null ? {} : { dispatcher_start: live.start }) }),
        note: `cancel requested by ${by}`,
      });
      this.cancelledBy.set(id, by);
      if (live === undefined) {
        this.settle(id, null);
        return 'cancelled';
      }
      this.settings.message(`unit ${id}: stopping it (cancel requested by ${by})`);
      stopRunningUnit(this.running(id, live), CONTROL_STOP_SIGNAL);
      return 'stopping';
    }
    if (entry.status !== 'queued' && entry.status !== 'deferred' && entry.status !== 'interrupted') return 'settled';
    this.cancelUnstarted(id, by, (entry.attempt ?? 0) > 0);
    return 'cancelled';
  }

  /** Record a unit that did not run `cancelled` by `by`, with a FALLBACK naming the cancel. */
  private cancelUnstarted(id: string, by: string, ranBefore: boolean): void {
    const note = `cancelled by ${by} before it ${ranBefore ? 'ran again' : 'ran'}`;
    this.setAsidePreviousResult(id, this.latest.get(id)!.attempt ?? 0);
    publishAtomic(this.paths.result(id), renderFallback({ unitId: id, reason: note }), { tag: 'prun' });
    this.record(id, { status: 'cancelled', ended_at: nowIso(), exit_code: null, note }, ['retry']);
    this.followUps.delete(id);
    this.settings.message(`unit ${id} cancelled: ${note}`);
    this.settled(id);
    this.wake?.();
  }

  /**
   * A unit handed to this driver's supervisor that never started there (it waited for a worker
   * slot): one `prun cancel` asked to stop is cancelled as a queued unit is (even when its
   * supervisor died before the stop reached it); one stopped by the batch (its signal) or lost
   * with its supervisor is queued again, as if never handed over, with the follow-up turn it was
   * to run.
   */
  private endedUnstarted(id: string, died: SupervisorDeath | null, followUp: FollowUp | null): void {
    const entry = this.latest.get(id)!;
    if (entry.stop_reason === 'cancel') {
      this.cancelUnstarted(id, this.cancelledBy.get(id) ?? 'prun cancel', (entry.attempt ?? 1) > 1);
      return;
    }
    // No stop_signal: a signal sent to the supervisor itself stopped it, not the batch.
    const stopped = entry.stop_signal === undefined ? 'stopped' : `stopped (${entry.stop_signal})`;
    const why = died !== null ? `${supervisorDeathText(died)} before starting it` : `${stopped} before it started`;
    if (followUp !== null) this.followUps.set(id, followUp);
    this.record(id, { status: 'queued', ended_at: null, exit_code: null, note: `${why}; queued again` });
    this.wake?.();
  }

  private defer(id: string, base: Partial<LedgerEntry>, reason: string, refusal: 'quota' | 'busy'): void {
    const now = Date.now();
    const retryAt = refusal === 'busy' ? now + BUSY_RETRY_MS : (quotaRetryTime(reason, now) ?? now + this.settings.quotaWaitMs);
    this.record(id, {
      ...base,
      status: 'deferred',
      exit_code: base.exit_code ?? EXIT.quota,
      ended_at: nowIso(),
      retry_at: new Date(retryAt).toISOString(),
      note: reason,
    });
    if (refusal === 'busy') {
      this.settings.message(`unit ${id} deferred for ${BUSY_RETRY_MS / 1000}s: ${reason}`);
    } else if (!this.settings.quotaWait) {
      this.settings.message(`unit ${id} refused on quota (${reason}); stopping the batch (--no-quota-wait)`);
      this.stopping ??= 'quota';
    } else {
      this.settings.message(`unit ${id} deferred on quota until ${new Date(retryAt).toISOString()}: ${reason}`);
    }
  }

  /** Where the previous attempt's result goes so the dispatcher gets a fresh path. */
  private setAsidePreviousResult(id: string, attempt: number): void {
    setAside(this.paths.result(id), this.paths.results, id, 'md', attempt);
  }

  /**
   * The previous attempt's captures go to `logs/<id>.attempt-N.{stdout,stderr}`, so the new
   * dispatcher's capture holds only its own lines: its STATE-DIR (the state dir recorded for
   * this attempt, on the live and the adoption path) and its last stderr line.
   */
  private setAsidePreviousLogs(id: string, attempt: number): void {
    setAside(this.paths.stdoutLog(id), this.paths.logs, id, 'stdout', attempt);
    setAside(this.paths.stderrLog(id), this.paths.logs, id, 'stderr', attempt);
  }

  private failWithoutRun(id: string, reason: string): void {
    const result = this.paths.result(id);
    this.setAsidePreviousResult(id, this.latest.get(id)!.attempt ?? 0);
    publishAtomic(result, renderFallback({ unitId: id, reason }), { tag: 'prun' });
    this.record(id, { status: 'failed', ended_at: nowIso(), exit_code: null, note: reason });
    this.settings.message(`unit ${id} failed without running: ${reason}`);
    this.settled(id);
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
    this.setAsidePreviousLogs(id, previous.attempt ?? 0);

    const followUp = this.followUps.get(id) ?? null;
    this.followUps.delete(id);
    let promptFile = this.paths.prompt(id);
    if (followUp?.restate) {
      promptFile = this.paths.restatePrompt(id);
      publishAtomic(promptFile, restatePromptText(id), { tag: 'prun' });
    }
    const mode = unitMode(unit);
    const request: DispatchRequest = {
      unitId: id,
      promptFile,
      resultFile: this.paths.result(id),
      mode,
      addDirs: unit.addDirs,
      continueFrom: followUp?.stateDir ?? null,
    };
    const envChanges = unitEnvChanges(this.settings.env, unit, cloneDir);
    let host: SupervisorClient;
    try {
      host = this.ownSupervisor();
    } catch (error) {
      this.failWithoutRun(id, `could not start the batch's supervisor: ${(error as Error).message}`);
      return;
    }
    const { pid, start } = host.identity;

    // Recorded before the hand-over, naming the supervisor: a batch killed at any point after
    // this line finds the unit `running` on --resume and asks that supervisor, so no unit is
    // dispatched twice.
    this.record(
      id,
      {
        status: 'running',
        model: unit.model,
        mode,
        // Absolute, whatever an older prun wrote.
        prompt_file: promptFile,
        result_file: this.paths.result(id),
        clone_dir: cloneDir,
        state_dir: null,
        started_at: nowIso(),
        ended_at: null,
        exit_code: null,
        attempt,
        dispatcher_pid: pid,
        dispatcher_start: start,
        supervised: true,
        ...(followUp ? { note: `${followUp.restate ? 'restating the result' : 'follow-up turn'} of ${followUp.stateDir}` } : {}),
      },
      ['model_notes', 'quota_fallback'],
    );
    // The dispatch's output goes to files, not pipes: a resumed batch reads their STATE-DIR lines.
    host.start({
      op: 'start',
      id,
      attempt,
      argv: dispatcherOptions(request),
      // The supervisor's own environment is the batch's (ownSupervisor): only the unit's changes go.
      envChanges,
      stdout: this.paths.stdoutLog(id),
      stderr: this.paths.stderrLog(id),
      // The worker slots that are this supervisor's: --jobs, less those adopted units take.
      slots: this.settings.jobs - this.adoptedRunning(),
    });
    const handedOverAt = Date.now();
    this.live.set(id, {
      how: 'own',
      pid,
      attempt,
      start,
      memory: initialMemory(handedOverAt),
      stallReported: false,
      firstLookAt: handedOverAt + firstLookAfterMs(this.settings.stallSeconds),
      followUp,
    });
    this.settings.progress(`started ${id}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
  }

  /**
   * The running units, the last handed over first: a stop for every unit reaches the one waiting
   * in the supervisor for a worker slot (always the last handed over) before any worker exits of
   * it, so the waiting unit ends there unstarted instead of taking the freed slot.
   */
  private newestFirst(): Array<[string, Live]> {
    return [...this.live].reverse();
  }

  /** Running units that an earlier driver's supervisor (or a dispatcher process of their own) runs. */
  private adoptedRunning(): number {
    let count = 0;
    for (const live of this.live.values()) if (live.how !== 'own') count += 1;
    return count;
  }

  /** This driver's supervisor, started now if there is none (or the last one died). */
  private ownSupervisor(): SupervisorClient {
    if (this.supervisor?.usable !== true) {
      this.supervisor = SupervisorClient.start(
        this.paths.dir,
        this.settings.env,
        (id, attempt, exitCode, died, started) => {
          const live = this.live.get(id);
          if (live?.how !== 'own' || live.attempt !== attempt) return;
          this.live.delete(id);
          if (!started) {
            this.endedUnstarted(id, died, live.followUp ?? null);
            return;
          }
          this.settle(id, exitCode, null, died === null ? null : supervisorDeathText(died));
        },
        (death, lost, unstarted) => {
          const took = lost.length === 0 ? ' (it hosted no running unit)' : `, taking ${lost.length} running unit(s) with it: ${lost.join(', ')}`;
          const queued = unstarted.length === 0 ? '' : `; not started there, queued again: ${unstarted.join(', ')}`;
          this.settings.message(`${supervisorDeathText(death)}${took}${queued}`);
        },
        (id, attempt, startedAt) => {
          // It waited for a worker slot: `started_at` said when it was handed over.
          const live = this.live.get(id);
          if (live?.how !== 'own' || live.attempt !== attempt) return;
          this.record(id, { started_at: startedAt }, [], { sync: false });
        },
      );
    }
    return this.supervisor;
  }

  /**
   * Whether a unit this driver adopted has ended: a hosted one by its supervisor's record (or the
   * supervisor's death), a dispatcher process of its own by its absence (not our child).
   */
  private adoptedEnd(id: string, live: Live): { exitCode: number | null } | null {
    if (live.how === 'hosted') {
      const state = hostedState(this.paths.dir, { pid: live.pid, start: live.start ?? '' }, id, live.attempt);
      if (state.kind === 'running') return null;
      return { exitCode: state.kind === 'ended' ? state.exitCode : null };
    }
    return isDispatcherFor(live.pid, this.paths.result(id), live.start) ? null : { exitCode: null };
  }

  /**
   * Periodic look at running units: record state dirs as they appear, watch tails for stalls,
   * see adopted dispatches end. A unit this driver handed over is first looked at after
   * `firstLookAfterMs`: one that ends sooner has its state dir in its end line only.
   */
  private observe(): void {
    const now = Date.now();
    for (const [id, live] of this.live) {
      if (now < live.firstLookAt) continue;
      const entry = this.latest.get(id)!;
      if (entry.state_dir === null) {
        const stateDir = stateDirFromLog(this.paths.stdoutLog(id));
        if (stateDir) this.record(id, { state_dir: stateDir }, [], { sync: false });
      }
      const ended = live.how === 'own' ? null : this.adoptedEnd(id, live);
      if (ended !== null) {
        this.live.delete(id);
        this.settle(id, ended.exitCode, 'adopted dispatch ended');
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

  /**
   * Stop starting units and pass the signal to every running dispatcher, recording first that
   * the batch stopped it, so its end is `interrupted` even if this process dies meanwhile. A
   * repeated signal is passed on again (the dispatcher then kills its worker group at once).
   */
  interrupt(signal: NodeJS.Signals): void {
    const first = this.stopping === null || this.stopping === 'quota' || this.stopping === 'halt';
    this.stopping = signal;
    this.settings.message(`${signal}: stopping ${this.live.size} running unit(s)`);
    for (const [id, live] of this.newestFirst()) {
      // A unit already being cancelled stays a cancel: only the signal passes on.
      if (first && this.latest.get(id)!.stop_reason !== 'cancel') this.record(id, { stop_signal: signal }, ['stop_reason']);
      stopRunningUnit(this.running(id, live), signal);
    }
    this.wake?.();
  }

  async run(): Promise<BatchOutcome> {
    const ids = new Set(this.units.map((unit) => unit.id));
    for (;;) {
      // `prun cancel` from another terminal: act on it (the ledger first), then drop the request.
      for (const request of pendingCancelRequests(this.paths.dir, ids)) {
        this.cancel(request.id, request.by);
        clearCancelRequest(this.paths.dir, request.id);
      }
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
        jobs: this.settings.jobs + unitsAhead({ halt: Boolean(this.settings.halt), quotaWait: this.settings.quotaWait, adoptedRunning: this.adoptedRunning() }),
        now,
        startingAllowed: this.stopping === null && this.settings.startUnits !== false,
      });
      for (const [id, dep] of decision.failForDependency) this.failWithoutRun(id, `dependency ${dep} ${this.latest.get(dep)!.status}`);
      if (decision.failForDependency.length > 0) continue;
      for (const id of decision.start) this.start(id);
      // What was written unsynced (a unit's end, a state dir) and has waited long enough for a
      // hand-over to carry it reaches the disk now; the rest is due before the wait can end.
      const afterStarts = Date.now();
      const syncDueIn = this.syncLedgerWhenDue(afterStarts);
      if (decision.finished) break;
      // The running units are looked at every OBSERVE_EVERY_MS, not after every unit's end.
      const observeDueIn = this.observedAt + OBSERVE_EVERY_MS - afterStarts;
      const waitMs = Math.max(0, Math.min(OBSERVE_EVERY_MS, observeDueIn, syncDueIn, decision.wakeAt === null ? Infinity : decision.wakeAt - afterStarts));
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(done, waitMs);
        function done(): void {
          clearTimeout(timer);
          resolveWait();
        }
        this.wake = done;
      });
      this.wake = null;
      const woke = Date.now();
      if (woke - this.observedAt >= OBSERVE_EVERY_MS) {
        this.observedAt = woke;
        this.observe();
      }
    }
    this.syncLedger();
    // Nothing runs any more: let the supervisor go, and clear away the folders of dead ones.
    await this.supervisor?.close();
    const inUse = new Set(
      [...this.latest.values()].map((entry) => (entry.status === 'running' ? supervisorOf(entry) : null)).flatMap((who) => (who === null ? [] : [`${who.pid}-${who.start}`])),
    );
    removeDeadSupervisors(this.paths.dir, inUse);
    const failed = [...this.latest.values()].filter((entry) => countsAgainstBatch(entry.status)).length;
    let exitCode = batchExitCode(failed);
    let stoppedBy: BatchOutcome['stoppedBy'] = 'finished';
    if (this.stopping === 'quota') {
      exitCode = EXIT.quota;
      stoppedBy = 'quota';
    } else if (this.stopping === 'halt') {
      exitCode = EXIT.halted;
      stoppedBy = 'halt';
    } else if (this.stopping !== null) {
      exitCode = signalExitCode(this.stopping);
      stoppedBy = this.stopping;
    }
    return { dir: this.paths.dir, exitCode, stoppedBy, units: this.report() };
  }

  /** What a live view shows: each unit's latest ledger entry and the units reported stalled (read-only views). */
  snapshot(): { latest: ReadonlyMap<string, LedgerEntry>; stalled: ReadonlySet<string> } {
    return { latest: this.latest, stalled: this.stalled };
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
        quota_fallback: entry.quota_fallback === true,
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
