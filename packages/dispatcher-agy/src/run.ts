/**
 * The dispatch itself (README, "How it works"): state directory, quota route, preflight, scrubbed
 * launch, live capture and publication. Everything that decides lives in decide.ts; this file does the I/O.
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, appendFileSync, closeSync, constants as fsConstants, mkdirSync, openSync, realpathSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { CliError, packageVersion, signalExitCode } from '@prun/kit/cli';
import { removeStaleTemps } from '@prun/kit/fs';
import { constants as osConstants } from 'node:os';
import { dirname, join } from 'node:path';
import { formatWithheld, scrubEnv, type ScrubResult } from '@prun/env-scrub';
import {
  DEFAULT_MODEL,
  allowResolution,
  effortFor,
  fallbackModelFor,
  locateAgy,
  modelPool,
  needsEffortFlag,
  parseListing,
  quotaNoteLineFor,
  resolveAgainstListing,
} from '@prun/model-resolve';
// The dispatch entry: routing without zod; the snapshot's schemas load only when a snapshot is read.
import {
  QUOTA_EXHAUSTED_EXIT,
  loadPoolStatesForDispatch,
  recheckAfterFallback,
  refresh,
  route,
  routeNeedsSnapshot,
  snapshotLocation,
  type PoolStates,
} from '@prun/quota/dispatch';
import {
  STATE_FILES,
  formatStateDirLine,
  newNonce,
  publishAtomicAsync,
  responseSiblingPath,
  stateDirName,
  systemTempDir,
} from '@prun/unit-state';
import { parseArgs } from './args.js';
import { helpText, usageText } from './help.js';
import {
  buildRelayPrompt,
  buildWorkerArgv,
  decideOutcome,
  stdinPayload,
  type WorkerEnd,
} from './decide.js';
import { cachedLaunchPlan, helperArgv, helperLaunch, isolationRecord, parksAtInit, type ChainProbe, type LaunchPlan, type ProbeResult } from './isolation.js';
import { errorText, runCaptured, signalGroup, signalNumber, spawnErrorText, timerAfter, type CapturedRun } from './process.js';
import { MESSAGE_PREFIX, PUBLISH_TAG, parsePreflightSettings } from './settings.js';
import { UsageError, universalNewlines, validate, type DispatchConfig } from './validate.js';
import { echoLastLines, publishCaptureFallback, readEventStreamFile } from './capture-read.js';
import { WorkerProcess, type WorkerExit } from './worker.js';
import { abandonEarlyChain, takeEarlyChain } from './early.js';
import { toStopSource, type StopRequest, type UnitStopSource } from './stop.js';
import type { ChainKey, ChainReserve } from './reserve.js';

const MANIFEST = new URL('../package.json', import.meta.url);


/** One unit to run in this process (README, "Library: running units in-process"). */
export interface UnitOptions {
  /** The bin's arguments (without node and the script). */
  argv: readonly string[];
  /** The unit's working directory: what relative paths are joined onto, as the bin's cwd. */
  cwd: string;
  /** The unit's environment, as the bin's process.env (read, never modified). */
  env: NodeJS.ProcessEnv;
  /** Where the bin's stdout text goes (the one `STATE-DIR` line, or --help/--version). */
  stdout: (text: string) => void;
  /** Where the bin's stderr text goes (`dispatch-task-agy: ...` lines, the tail echo). */
  stderr: (text: string) => void;
  /** Stop requests: a UnitStopper, any UnitStopSource, or an AbortSignal. */
  stop?: UnitStopSource | AbortSignal;
  /**
   * The host's reserve of parked chains, shared by the units it runs one after another: the
   * unit takes a spare that was started with its own plan, directory and environment, and
   * parks the next one once its worker runs (reserve.ts). The host closes it when it takes no
   * more units.
   */
  chains?: ChainReserve;
  /**
   * Called once, as soon as the unit's worker has exited (agy's exit reported by its namespace
   * init, or the launch chain gone), before the outcome is read and published: a host that
   * limits how many workers run at once may start the next one then. Called too when the launch
   * chain ends without agy having run (a busy directory, a failed exec); never when no chain
   * was launched (the dispatch ended before, or the chain's spawn failed).
   */
  onWorkerExit?: () => void;
}

/**
 * What only the bin does, because it owns its process (cli.ts). A hosted unit has none of it:
 * no signal handler, no process.cwd(), no death by signal.
 */
export interface BinHooks {
  /** The working directory, read when the unit needs it (a deleted cwd is then an internal error, as before). */
  cwd: () => string;
  help: () => string;
  version: () => string;
  /** A stop arrived before anything was created: die of it, as its default action would. */
  dieOf: (signal: NodeJS.Signals) => void;
  /**
   * The outcome is being decided or published: from now on every catchable signal whose
   * default action ends the process is ignored until it exits, so its exit code is the outcome.
   */
  holdSignals: () => void;
}

/** A failure that ends the dispatch with one message and its exit code (never a stack trace). */
function stop(reason: string, exitCode: number): CliError {
  return new CliError(reason, { exitCode });
}

interface Unit {
  config: DispatchConfig;
  stateDir: string;
  nonce: string;
  scratchDir: string;
}

/** A state directory being filled before it is renamed to its `prun-task-*` name. */
const BUILDING_PREFIX = '.prun-building-';

/** How much of a capture (`tail`, `tail.stderr-tmp`) is read back for the outcome and the FALLBACK. */
const MAX_CAPTURE_READ_BYTES = 256 * 1024 * 1024;

type Phase = 'validating' | 'prelaunch' | 'running' | 'finishing' | 'done';

/** The dispatcher's mutable run state, shared with the stop requests. */
class Dispatch {
  phase: Phase = 'validating';
  unit: Unit | null = null;
  /** How the worker will be started, decided before STATE-DIR. */
  plan: LaunchPlan | null = null;
  /** The preflight commands running now (`--version` and `models` run at once). */
  readonly helpers = new Set<ChildProcess>();
  /**
   * The worker's isolated chain, started before the state directory and parked at its init's
   * `ready` until `runWorker` gives it the worker (README, "Isolation and no orphans").
   */
  parked: WorkerProcess | null = null;
  /** What the parked chain was started with, and whether this unit parks the reserve's next spare. */
  chainKey: ChainKey | null = null;
  refillChains = false;
  worker: WorkerProcess | null = null;
  /** The worker's scrubbed environment (README "How it works", step 8), made before the probe. */
  scrubbed: ScrubResult | null = null;
  interruptedBy: NodeJS.Signals | null = null;
  deadlineHit = false;
  killTimer: NodeJS.Timeout | null = null;
  /**
   * Set when a stop ended the dispatch before the worker started: `runUnit` returns this code
   * at once and the steps still running stop before they create or launch anything.
   */
  stoppedWith: number | null = null;
  private signalsHeld = false;
  private stopDispatch: (code: number) => void = () => undefined;
  readonly stopped = new Promise<number>((resolve) => {
    this.stopDispatch = resolve;
  });

  constructor(
    readonly io: UnitOptions,
    readonly cwd: () => string,
    readonly bin: BinHooks | null,
  ) {}

  say(message: string): void {
    this.io.stderr(`${MESSAGE_PREFIX}${message}\n`);
  }

  statePath(name: string): string {
    return join(this.unit!.stateDir, name);
  }

  writeState(name: string, text: string): void {
    writeFileSync(this.statePath(name), text);
  }

  /**
   * Where and how a capture is read back (capture-read.ts): bounded, in memory independent of
   * its size, and without blocking (the worker can reach the state directory, and a FIFO put
   * in place of `tail` must not hang the dispatcher).
   */
  readonly captureRead = { maxBytes: MAX_CAPTURE_READ_BYTES };

  /**
   * The outcome is being decided or published: the bin now ignores every catchable signal
   * whose default action would end it (BinHooks.holdSignals); a stop request is ignored by
   * the phase alone.
   */
  holdSignals(): void {
    if (this.signalsHeld) return;
    this.signalsHeld = true;
    this.bin?.holdSignals();
  }

  /**
   * The dispatch has returned its exit code. After STATE-DIR the outcome is on disk and final:
   * every later request is ignored (and the bin keeps ignoring signals until it exits).
   */
  settle(): void {
    if (this.unit === null) return;
    this.phase = 'done';
    this.holdSignals();
  }

  /** Stop the worker group: the signal first, SIGKILL after the grace. */
  stopWorker(signal: NodeJS.Signals): void {
    const worker = this.worker;
    if (worker === null) return;
    worker.signal(signal);
    if (this.killTimer === null) {
      const graceMs = (this.unit?.config.signalGraceSeconds ?? 5) * 1000;
      this.killTimer = timerAfter(graceMs, () => worker.signal('SIGKILL'));
    }
  }

  onRequest(request: StopRequest): void {
    if (request.kind === 'stop') this.onStop(request.signal);
    else this.onKill();
  }

  /** What the bin does when `signal` arrives, by phase. */
  onStop(signal: NodeJS.Signals): void {
    const code = signalExitCode(signal);
    switch (this.phase) {
      case 'validating':
        // Nothing has been created or started yet. The bin leaves as the default action would;
        // a hosted unit ends at once with the code a shell reports for that death.
        if (this.stoppedWith !== null) return;
        this.stoppedWith = code;
        this.bin?.dieOf(signal);
        this.stopDispatch(code);
        break;
      case 'prelaunch': {
        if (this.stoppedWith !== null) return;
        for (const helper of this.helpers) if (helper.pid !== undefined) signalGroup(helper.pid, 'SIGKILL');
        const reason = `dispatcher received ${signal} before the Agy worker started`;
        this.stoppedWith = this.failEarly(reason, code);
        this.stopDispatch(this.stoppedWith);
        break;
      }
      case 'running':
        // The worker has exited: its outcome stands even while its pipes still drain.
        if (this.worker?.exited === true) break;
        if (this.interruptedBy !== null) {
          // A second signal: the user means it.
          this.worker?.signal('SIGKILL');
          return;
        }
        this.interruptedBy = signal;
        this.stopWorker(signal);
        break;
      case 'finishing':
        // The worker group is gone and its outcome decided; publication is short and must not
        // be torn, so the signal is ignored.
        break;
      case 'done':
        // The outcome is published and the exit code set: nothing may change it now.
        break;
    }
  }

  /**
   * "Kill now": while the worker runs, its whole tree is killed at once (what the grace timer
   * does), and the outcome is the interrupted one (by the first stop's signal, else SIGTERM).
   * In any other phase it is a stop as SIGTERM.
   */
  onKill(): void {
    if (this.phase !== 'running') {
      this.onStop('SIGTERM');
      return;
    }
    if (this.worker?.exited === true) return;
    this.interruptedBy ??= 'SIGTERM';
    this.worker?.signal('SIGKILL');
  }

  /** Publish the FALLBACK unless the result path already holds a non-empty file. */
  publishFallback(reason: string): boolean {
    const { config, nonce } = this.unit!;
    if (nonEmptyFile(config.resultPath)) return true;
    // The original reads the captures in text mode: CRLF and lone CR arrive as LF.
    const captures = { stdoutPath: this.statePath(STATE_FILES.tail), stderrPath: this.statePath(STATE_FILES.tailStderr) };
    try {
      publishCaptureFallback(config.resultPath, { unitId: config.unitId, reason, ...captures }, this.captureRead, { tag: PUBLISH_TAG, nonce });
      return true;
    } catch (error) {
      this.say(`could not write FALLBACK result to ${config.resultPath}: ${errorText(error)}`);
      return false;
    }
  }

  /** An early exit after STATE-DIR: record the reason, publish the FALLBACK, say why. */
  failEarly(reason: string, code: number): number {
    this.holdSignals();
    try {
      this.writeState(STATE_FILES.tailStderr, `${reason}\n`);
    } catch {
      // The FALLBACK below still carries the reason.
    }
    const published = this.publishFallback(reason);
    this.say(reason);
    return published ? code : 70;
  }
}

function nonEmptyFile(path: string): boolean {
  try {
    // No result yet is the common case (asked once per unit): answered without an Error.
    const stat = statSync(path, { throwIfNoEntry: false });
    return stat !== undefined && stat.isFile() && stat.size > 0;
  } catch {
    return false;
  }
}

/**
 * Runs one unit in this process and returns the exit code the bin would exit with. Never
 * throws; touches no process-wide state (no signal handler, no process.cwd/env/exitCode), so
 * one process can run many at once. README, "Library: running units in-process".
 */
export function runUnit(options: UnitOptions): Promise<number> {
  return runDispatch(options, null);
}

/** The bin's entry (cli.ts): `runUnit` plus what only a process owner does. */
export async function runDispatch(options: UnitOptions, bin: BinHooks | null): Promise<number> {
  const cwd = bin?.cwd ?? ((): string => options.cwd);
  const run = new Dispatch(options, cwd, bin);
  const unsubscribe = toStopSource(options.stop)?.subscribe((request) => run.onRequest(request)) ?? (() => undefined);
  try {
    // A stop that came before the unit started.
    if (run.stoppedWith !== null) return run.stoppedWith;
    return await Promise.race([dispatchSteps(run, options.argv), run.stopped]);
  } catch (error) {
    if (run.stoppedWith !== null) return run.stoppedWith;
    const [reason, code] = error instanceof CliError ? [error.message, error.exitCode] : [`internal error: ${errorText(error)}`, 70];
    if (run.unit !== null) return run.failEarly(reason, code);
    run.say(reason);
    return code;
  } finally {
    if (run.killTimer !== null) clearTimeout(run.killTimer);
    // A chain parked for a worker that never started must not stay (a no-op once it got one).
    run.parked?.abandon();
    if (bin !== null) abandonEarlyChain();
    run.settle();
    unsubscribe();
  }
}

/**
 * Start the worker's isolated chain under `plan` now, parked until its worker is known; null
 * when even the spawn failed (the launch then fails as it would have).
 */
function parkChain(run: Dispatch, plan: LaunchPlan, env: Record<string, string>, cwd: string): WorkerProcess | null {
  try {
    run.parked = WorkerProcess.park({ plan, env, cwd, dispatcherPid: process.pid }, osConstants.signals, run.io.chains?.forkerFor(plan) ?? null);
  } catch {
    run.parked = null;
  }
  return run.parked;
}

/**
 * The isolation probe answered by the unit's own chain: ready means the namespace is made and
 * the capabilities are dropped, as the probe's `perl -e 'exit 0'` in the chain's place showed;
 * the chain then stays parked for the worker. One not ready is gone, and the plan's other
 * probes decide as before.
 */
function chainProbeFor(run: Dispatch, env: Record<string, string>, cwd: string): ChainProbe {
  return async (plan: LaunchPlan): Promise<ProbeResult> => {
    const chain = parkChain(run, plan, env, cwd);
    if (chain === null) return { ok: false, why: '', stdout: '' };
    const result = await chain.readyInTime();
    if (!result.ok) {
      chain.abandon();
      if (run.parked === chain) run.parked = null;
    }
    return result;
  };
}

async function dispatchSteps(run: Dispatch, argv: readonly string[]): Promise<number> {
  const { io } = run;
  const env = io.env;
  const parsed = parseArgs(argv);
  if (parsed.kind === 'help') {
    io.stdout(run.bin?.help() ?? helpText());
    return 0;
  }
  if (parsed.kind === 'version') {
    io.stdout(`${run.bin?.version() ?? packageVersion(MANIFEST)}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    io.stderr(`${usageText()}\n${MESSAGE_PREFIX}error: ${parsed.message}\n`);
    return 2;
  }
  const cwd = realpathSync(run.cwd());
  let config: DispatchConfig;
  try {
    config = validate(parsed.args, { env, cwd, defaultModel: DEFAULT_MODEL, locateBinary: locateAgy });
  } catch (error) {
    if (error instanceof UsageError) {
      run.say(error.message);
      return error.exitCode;
    }
    throw error;
  }

  // The worker's environment (step 8) is known now: an isolated chain starts with it before the
  // state directory exists, and is the isolation probe when this process has not probed yet.
  // The bin started that chain already, while its command loaded (early.ts).
  const early = run.bin !== null ? takeEarlyChain(config.isolate, cwd, env) : null;
  run.scrubbed = early?.scrubbed ?? scrubEnv(env);
  const workerEnv = run.scrubbed.env;
  // Refuse before anything is created when isolation is required and this machine cannot give it.
  const plan = await (early?.plan ?? cachedLaunchPlan(config.isolate, process.platform, process.getuid?.() === 0, env, chainProbeFor(run, workerEnv, cwd)));
  if (early !== null) run.parked = early.parked;
  // A stop while the machine was probed: nothing has been created (a parked chain goes in runDispatch).
  if (run.stoppedWith !== null) return run.stoppedWith;
  if (config.isolate === 'pid' && plan.isolation.kind !== 'pid') {
    run.say(`PRUN_ISOLATE=pid, but the worker cannot be isolated here: ${plan.isolation.reason}`);
    return 2;
  }
  run.plan = plan;
  if (parksAtInit(plan)) {
    run.chainKey = { plan, env: workerEnv, cwd };
    // A host running unit after unit may have parked this unit's chain already (reserve.ts).
    const reserved = io.chains?.take(run.chainKey);
    if (reserved !== undefined) run.refillChains = reserved.refill;
    // Only this file parks chains in a reserve: each is a WorkerProcess.
    if (run.parked === null && reserved?.chain != null) run.parked = reserved.chain as WorkerProcess;
    else reserved?.chain?.abandon();
    // The plan was already known (another unit probed), or a later probe found the namespace:
    // the chain starts now, while the state directory is made and the preflight runs.
    if (run.parked === null) parkChain(run, plan, workerEnv, cwd);
  }

  const unit = createStateDir(config, env, plan);
  if (typeof unit === 'string') {
    run.say(`failed to prepare isolated working directory: ${unit}`);
    return 2;
  }
  run.unit = unit;
  run.phase = 'prelaunch';
  // A dispatcher killed mid-publication leaves its temp file beside the result; the next
  // dispatch into the same directory removes it (never a live writer's): once per process.
  sweepResultDir(dirname(config.resultPath));
  io.stdout(formatStateDirLine(unit.stateDir));

  const model = await routeAndPreflight(run, config);
  // A signal before the launch has already published the FALLBACK and decided the exit code.
  if (run.stoppedWith !== null) return run.stoppedWith;
  return launchAndPublish(run, model);
}

/**
 * The result directories this process has swept for the publication temps of killed
 * dispatchers. A temp beside a result is a dead writer's, and a unit of this process cannot leave
 * one without this process dying with it: one sweep per directory per process removes all there
 * is, and a host running unit after unit into one directory (a batch's supervisor, its
 * `results/`) does not list the growing directory again for each. A temp of another process
 * that dies later is removed by the next process's first unit there.
 */
const sweptResultDirs = new Set<string>();

function sweepResultDir(dir: string): void {
  if (sweptResultDirs.has(dir)) return;
  sweptResultDirs.add(dir);
  removeStaleTemps(dir, { tag: PUBLISH_TAG });
}

/**
 * README "How it works", step 2, up to the STATE-DIR line (files: docs/state-directory.md); an
 * error text when the directories cannot be made.
 *
 * The directory is filled under a hidden temporary name in the same temp directory and renamed
 * into place, so whoever sees a `prun-task-*` directory (a coordinator, prun-monitor, a
 * recovering `prun batch`) always finds its `dispatch-pid` and the other creation files: a
 * dispatcher SIGKILLed mid-creation reads as failed(dispatch-dead), never as a unit that has not
 * written its pid yet. When the scratch directory cannot be made the state dir still appears
 * (exit 2, no STATE-DIR line), whole, as before.
 */
function createStateDir(config: DispatchConfig, env: NodeJS.ProcessEnv, plan: LaunchPlan): Unit | string {
  const nonce = newNonce();
  const tmp = systemTempDir(env, config.cwd);
  const stateDir = join(tmp, stateDirName({ cwd: config.cwd, unitId: config.unitId, pid: process.pid, nonce }));
  // Not `prun-task-*` (no reader takes it for a unit) and of fixed length (fits NAME_MAX
  // whatever the unit id).
  const building = join(tmp, `${BUILDING_PREFIX}${nonce}`);
  let failure: string | null = null;
  try {
    mkdirSync(building);
    const write = (name: string, text: string): void => writeFileSync(join(building, name), text);
    write(STATE_FILES.preMtime, '0\n');
    write(STATE_FILES.timestamp, `${Math.floor(Date.now() / 1000)}\n`);
    write(STATE_FILES.resultFile, `${config.resultPath}\n`);
    write(STATE_FILES.dispatchPid, `${process.pid}\n`);
    write(STATE_FILES.runtime, `${process.execPath}\n`);
    write(STATE_FILES.isolation, isolationRecord(plan));
    try {
      if (config.scratchDir === null) mkdirSync(join(building, STATE_FILES.workDir));
      else mkdirSync(config.scratchDir, { recursive: true });
    } catch (error) {
      failure = errorText(error);
    }
    renameSync(building, stateDir);
  } catch (error) {
    return errorText(error);
  }
  if (failure !== null) return failure;
  return { config, stateDir, nonce, scratchDir: config.scratchDir ?? join(stateDir, STATE_FILES.workDir) };
}

async function loadStatesIfNeeded(model: string, run: Dispatch, cwd: string): Promise<PoolStates | null> {
  const env = run.io.env;
  // The snapshot (and any refresh it triggers) is skipped entirely when routing cannot use it.
  if (!routeNeedsSnapshot(model, env)) return null;
  // A refresh resolves a relative ANTIGRAVITY_BIN against the unit's directory, not the process's.
  return loadPoolStatesForDispatch({ env, refresh: (options) => refresh({ ...options, cwd, parentDeath: refreshDiesWithUs(run) }) });
}

/**
 * A `/usage` refresh's agy must not outlive this process either (killed while the query runs, a
 * dispatcher or a batch's supervisor would leave it running): under the parent-death signal
 * like the worker's chain and the preflight, wherever the launch plan can arm it (helperArgv).
 */
function refreshDiesWithUs(run: Dispatch): (command: readonly string[]) => string[] {
  return (command) => helperArgv(run.plan, command, process.pid);
}

/** README "How it works", steps 3-6: the model that will run, or a Stop. */
async function routeAndPreflight(run: Dispatch, config: DispatchConfig): Promise<string> {
  const env = run.io.env;
  const pinned = config.namedModel !== '';
  const decision = route(config.model, pinned, await loadStatesIfNeeded(config.model, run, config.cwd), env);
  if (decision.block !== undefined) throw stop(decision.block, QUOTA_EXHAUSTED_EXIT);
  if (decision.note !== undefined) {
    run.say(decision.note);
    run.writeState(STATE_FILES.quotaNote, `${decision.note}\n`);
  }
  const routed = decision.model;
  run.writeState(STATE_FILES.model, `${routed}\n`);

  const final = await preflight(run, config, routed);
  // Rewritten only when it changed: the file already holds the routed model (one write fewer
  // per unit with the preflight off, and whenever the listing kept the model).
  if (final !== routed) run.writeState(STATE_FILES.model, `${final}\n`);
  const noteLine = quotaNoteLineFor(routed, final);
  if (noteLine !== null) appendFileSync(run.statePath(STATE_FILES.quotaNote), `${noteLine}\n`);
  if (modelPool(final) !== modelPool(routed)) {
    const block = recheckAfterFallback(final, await loadStatesIfNeeded(final, run, config.cwd), env);
    if (block !== null) throw stop(block, QUOTA_EXHAUSTED_EXIT);
  }
  return final;
}

/** What a bare spawn of `file` fails with when the kernel would refuse to exec it (`spawn <file> EACCES`), else null. */
function execRefusal(file: string): string | null {
  try {
    accessSync(file, fsConstants.X_OK);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return typeof code === 'string' ? spawnErrorText(file, code) : errorText(error);
  }
}

/**
 * README "How it works", step 5: `--version`, `models`, resolution; the final model or a Stop.
 *
 * The two commands run at once (each under its own timeout) and are judged in the original's
 * order, `--version` first: its timeout or failure is the outcome and `preflight-tail` holds only
 * its output, exactly as when `models` ran after it; `models` is then killed (its group) and
 * awaited. Either way the worker starts only after both have passed.
 */
async function preflight(run: Dispatch, config: DispatchConfig, routed: string): Promise<string> {
  const env = run.io.env;
  // A bad value is a UsageError (a CliError): the dispatch ends with its message, after STATE-DIR.
  const settings = parsePreflightSettings(env);
  if (settings.timeoutSeconds === null) return routed;
  const timeoutSeconds = settings.timeoutSeconds;

  const cannotLaunch = (why: string): CliError => stop(`could not launch Antigravity preflight: ${why}`, 70);
  // An executable that cannot be exec'd (§4.1 accepts a file without execute permission) is an
  // OS error launching, worded as a bare spawn words it, before either command starts: under
  // setpriv the failed exec would be setpriv's exit 126, a command that failed (preflight-tail,
  // "preflight failed").
  const refused = execRefusal(config.exe);
  if (refused !== null) throw cannotLaunch(refused);
  const parts: string[] = [];
  const writeTail = (): void => run.writeState(STATE_FILES.preflightTail, parts.join('\n'));
  const launch = (args: string[]): { child: () => ChildProcess | null; done: Promise<CapturedRun> } => {
    // Under the kernel's parent-death signal too (where the plan can arm it): a preflight
    // command must not outlive a killed dispatcher either. A wrapper's failed exec is still an
    // OS error launching (step 3), not a command that failed.
    const helper = helperLaunch(run.plan, [config.exe, ...args], process.pid, true);
    let mine: ChildProcess | null = null;
    const done = runCaptured(helper.argv[0]!, helper.argv.slice(1), {
      env,
      cwd: config.cwd,
      timeoutMs: timeoutSeconds * 1000,
      ...(helper.execFailure === null ? {} : { execReport: helper.execFailure }),
      onStart: (child) => {
        if (child !== null) {
          mine = child;
          run.helpers.add(child);
        } else if (mine !== null) {
          run.helpers.delete(mine);
        }
      },
    });
    return { child: () => mine, done };
  };
  /** One command's verdict, in the original's order; a Stop ends the preflight. */
  const judge = (result: CapturedRun): void => {
    if (result.timedOut) {
      writeTail();
      throw stop(`preflight timed out after ${timeoutSeconds}s`, 124);
    }
    if (result.launchError !== null) throw cannotLaunch(result.launchError);
    // The original captures preflight output in text mode: CRLF and lone CR arrive as LF.
    parts.push(universalNewlines(result.stdout), universalNewlines(result.stderr));
    if (result.code !== 0) {
      writeTail();
      throw stop("Antigravity preflight failed; run 'agy' interactively and sign in", 70);
    }
  };
  const version = launch(['--version']);
  const listing = launch(['models']);
  try {
    judge(await version.done);
  } catch (error) {
    // What `--version` decided stands: the listing is not needed, and nothing of it may stay.
    const pid = listing.child()?.pid;
    if (pid !== undefined) signalGroup(pid, 'SIGKILL');
    await listing.done;
    throw error;
  }
  const models = await listing.done;
  judge(models);
  const outcome = resolveAgainstListing({
    model: routed,
    listing: parseListing(models.stdout),
    allowResolution: allowResolution(routed, config.namedModel),
    fallbackModel: fallbackModelFor(routed),
  });
  for (const event of outcome.events) run.say(event.line);
  writeTail();
  if (outcome.unavailable) throw stop(outcome.reason ?? `model '${outcome.model}' is unavailable to this Antigravity account`, 70);
  return outcome.model;
}

interface WorkerRun {
  end: WorkerEnd;
}

/** README "How it works", steps 7-11. */
async function launchAndPublish(run: Dispatch, model: string): Promise<number> {
  const { config, scratchDir } = run.unit!;
  const env = run.io.env;
  const effort = needsEffortFlag(model) ? effortFor(model, env) : null;
  const relay = buildRelayPrompt(config.unitId, config.prompt);
  run.writeState(STATE_FILES.promptRelay, relay);
  const [exe, ...args] = buildWorkerArgv({
    exe: config.exe,
    model,
    effort,
    mode: config.mode,
    timeoutSeconds: config.timeoutSeconds,
    sandbox: config.sandbox,
    addDirs: config.addDirs,
    conversationId: config.conversationId,
  });
  const scrubbed = run.scrubbed ?? scrubEnv(env);
  const withheld = formatWithheld(scrubbed.withheld);
  if (withheld !== null) run.writeState(STATE_FILES.envWithheld, withheld);

  const { end } = await runWorker(run, [exe!, ...args], scrubbed.env, scratchDir, stdinPayload(relay));
  run.phase = 'finishing';
  run.holdSignals();
  return publish(run, end);
}

/**
 * Start the worker, copy its output live into the state directory, and wait for its end. The
 * process handling itself (launch chain, pipes, group signals, exact exit) is WorkerProcess.
 */
async function runWorker(run: Dispatch, command: string[], env: Record<string, string>, cwd: string, payload: string): Promise<WorkerRun> {
  const config = run.unit!.config;
  let worker: WorkerProcess;
  try {
    // The chain parked before the state directory was made gets its worker; otherwise it starts now.
    worker = run.parked !== null ? run.parked.go(cwd, command) : WorkerProcess.spawn({ plan: run.plan!, command, env, cwd, dispatcherPid: process.pid }, osConstants.signals);
  } catch (error) {
    throw stop(`failed to launch Antigravity CLI: ${errorText(error)}`, 70);
  }
  if (!worker.launched) {
    const start = await worker.started;
    throw stop(`failed to launch Antigravity CLI: ${start.kind === 'launch-failed' ? start.why : 'no process'}`, 70);
  }
  run.worker = worker;
  if (run.io.onWorkerExit !== undefined) worker.onExitKnown = run.io.onWorkerExit;
  run.phase = 'running';
  const start = await worker.started;
  if (start.kind !== 'started') {
    worker.discardOutput();
    await worker.finished();
    if (start.kind === 'busy') return { end: { kind: 'busy', dir: cwd } };
    // As in the original, a launch failure leaves no `tail`.
    throw stop(`failed to launch Antigravity CLI: ${start.why}`, 70);
  }
  try {
    run.writeState(STATE_FILES.workerPid, `${worker.workerPid}\n`);
  } catch (error) {
    worker.signal('SIGKILL');
    throw error;
  }

  // The captures are opened (truncated) once agy runs; no output is lost, since the pipes hold
  // it until the first read.
  const captures = new Captures(run.statePath(STATE_FILES.tail), run.statePath(STATE_FILES.tailStderr));
  try {
    captures.open();
  } catch (error) {
    // Without its captures the run cannot be reported: stop the worker before anything else.
    worker.signal('SIGKILL');
    throw error;
  }
  let stdinFailed = false;
  // Each chunk lands in the state dir as it arrives: monitors watch the tail grow.
  worker.pipeOutput(
    (chunk) => captures.stdout(chunk),
    (chunk) => captures.stderr(chunk),
  );
  worker.sendInput(payload, (error) => {
    stdinFailed = true;
    captures.stderr(Buffer.from(`stdin failure: ${errorText(error)}\n`, 'utf8'));
  });
  // The worker runs: the next unit's chain comes up meanwhile, off the path from this unit's
  // end to the next one's worker.
  const key = run.chainKey;
  if (run.refillChains && key !== null) run.io.chains?.refill(key, () => WorkerProcess.park({ ...key, dispatcherPid: process.pid }, osConstants.signals, run.io.chains?.forkerFor(key.plan) ?? null));
  const deadline = timerAfter((config.timeoutSeconds + config.killGraceSeconds) * 1000, () => {
    run.deadlineHit = true;
    run.stopWorker('SIGTERM');
  });
  try {
    const exit = await worker.finished();
    return { end: workerEnd(run, exit, stdinFailed, config) };
  } finally {
    if (deadline !== null) clearTimeout(deadline);
    captures.close();
  }
}

/** The two capture files; a late event (a stdin error after the worker is gone) writes nothing. */
class Captures {
  private tailFd = -1;
  private stderrFd = -1;
  private isOpen = false;

  constructor(
    private readonly tailPath: string,
    private readonly stderrPath: string,
  ) {}

  open(): void {
    this.tailFd = openSync(this.tailPath, 'w');
    try {
      this.stderrFd = openSync(this.stderrPath, 'w');
    } catch (error) {
      closeSync(this.tailFd);
      throw error;
    }
    this.isOpen = true;
  }

  stdout(chunk: Buffer): void {
    if (this.isOpen) writeSync(this.tailFd, chunk);
  }

  stderr(chunk: Buffer): void {
    if (this.isOpen) writeSync(this.stderrFd, chunk);
  }

  close(): void {
    if (!this.isOpen) return;
    this.isOpen = false;
    closeSync(this.tailFd);
    closeSync(this.stderrFd);
  }
}

function workerEnd(
  run: Dispatch,
  exit: WorkerExit,
  stdinFailed: boolean,
  config: DispatchConfig,
): WorkerEnd {
  if (run.interruptedBy !== null) {
    return { kind: 'interrupted', signal: run.interruptedBy, signalNumber: signalNumber(run.interruptedBy) };
  }
  if (run.deadlineHit) return { kind: 'deadline', timeoutSeconds: config.timeoutSeconds, graceSeconds: config.killGraceSeconds };
  if (stdinFailed) return { kind: 'stdin-failed' };
  if (exit.signal !== null) return { kind: 'killed', signal: exit.signal, signalNumber: signalNumber(exit.signal) };
  return { kind: 'exited', code: exit.code ?? 70 };
}

/** README "How it works", steps 10-11: conversation id, outcome, publication, tail echo. */
async function publish(run: Dispatch, end: WorkerEnd): Promise<number> {
  const { config, nonce } = run.unit!;
  const env = run.io.env;
  const reading = readEventStreamFile(run.statePath(STATE_FILES.tail), run.captureRead);
  if (reading.conversationId !== null) run.writeState(STATE_FILES.conversationId, `${reading.conversationId}\n`);
  const outcome = decideOutcome({ end, reading, workerWrote: nonEmptyFile(config.resultPath) });
  if (outcome.refreshQuota && snapshotLocation(env).managed) {
    // The next unit of the batch should route on the meter as it is now.
    await refresh({ force: true, env, cwd: config.cwd, parentDeath: refreshDiesWithUs(run) }).catch(() => undefined);
  }
  let { code, reason } = outcome;
  const publishOptions = { tag: PUBLISH_TAG, nonce };
  // The fsyncs wait off the event loop: a host running other units (a batch's supervisor) goes
  // on serving them meanwhile. Signals are held already (the 'finishing' phase), as before.
  if (outcome.publish.kind === 'response') {
    try {
      await publishAtomicAsync(config.resultPath, outcome.publish.text, publishOptions);
    } catch (error) {
      code = 70;
      reason = `could not publish result atomically: ${errorText(error)}`;
    }
  } else if (outcome.publish.kind === 'sibling') {
    try {
      await publishAtomicAsync(responseSiblingPath(config.resultPath), outcome.publish.text, publishOptions);
    } catch (error) {
      run.say(`kept worker result; could not store final response beside it: ${errorText(error)}`);
    }
  }
  if (code !== 0) {
    const published = run.publishFallback(reason);
    run.say(reason);
    if (!published) code = 70;
  }
  echoLastLines(run.statePath(STATE_FILES.tail), run.captureRead, run.io.stderr);
  echoLastLines(run.statePath(STATE_FILES.tailStderr), run.captureRead, run.io.stderr);
  return code;
}
