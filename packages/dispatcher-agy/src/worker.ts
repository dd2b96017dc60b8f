/**
 * One worker process: spawned through the launch chain (isolation.ts) as the leader of its own
 * process group, with its stdio piped and a status pipe on fd 3; signalled as a group; its
 * exit known exactly even when a namespace init stands between it and us. An isolated chain can
 * be started early and parked at its init's `ready` (`park`), and given its worker later (`go`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { PROBE_TIMEOUT_MS, initHeader, isolatedChainArgv, launchArgv, parksAtInit, type LaunchPlan, type ProbeResult } from './isolation.js';
import { errorText, signalGroup } from './process.js';
import type { ChainForker } from './forker.js';

/** How long captured pipes may stay open after the worker group is gone. */
const PIPE_DRAIN_MS = 2000;

/** How the start went, as the launcher reported it. */
export type WorkerStart =
  | { kind: 'started' }
  /** Another worker's tree holds the directory lock: agy was not started. */
  | { kind: 'busy' }
  | { kind: 'launch-failed'; why: string };

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface WorkerSpec {
  plan: LaunchPlan;
  command: readonly string[];
  env: Record<string, string>;
  cwd: string;
  dispatcherPid: number;
}

/** An isolated chain started before its worker is known (`WorkerProcess.park`). */
export interface ParkSpec {
  plan: LaunchPlan;
  env: Record<string, string>;
  /** Where the chain's programs start (agy itself runs in the directory `go` names). */
  cwd: string;
  dispatcherPid: number;
}

/** The chain from the host's forker when it serves this plan (forker.ts); null: spawn it. */
function forked(spec: ParkSpec, forker: ChainForker | null): ChildProcess | null {
  if (forker === null || !forker.usable || forker.plan !== spec.plan) return null;
  try {
    return forker.fork(spec);
  } catch {
    return null;
  }
}

function spawnChain(spec: ParkSpec): ChildProcess {
  const argv = isolatedChainArgv(spec.plan, spec.dispatcherPid);
  return spawn(argv[0]!, argv.slice(1), { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true });
}

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>();

function signalName(n: number, names: Record<string, number>): NodeJS.Signals | null {
  if (SIGNAL_NAMES.size === 0) for (const [name, num] of Object.entries(names)) SIGNAL_NAMES.set(num, name as NodeJS.Signals);
  return SIGNAL_NAMES.get(n) ?? null;
}

export class WorkerProcess {
  readonly pid: number;
  /** Settles once the launcher has said whether agy runs. */
  readonly started: Promise<WorkerStart>;
  /**
   * A parked chain: ok once its init is ready for a worker (the namespace is made and no
   * capability is left); not ok when the chain ended before (or did not get there in time).
   */
  readonly ready: Promise<ProbeResult>;
  private resolveReady: (result: ProbeResult) => void = () => undefined;
  /** `go` has been called (or the worker was spawned whole). */
  private given = false;
  private readonly child: ChildProcess;
  /** No namespace: the launcher stays as agy's keeper and agy leads a group of its own. */
  private readonly keeper: boolean;
  /** agy's pid as the launcher reported it (only meaningful outside a namespace). */
  private reportedPid: number | null = null;
  private reported: WorkerExit | null = null;
  private exitSeen: WorkerExit | null = null;
  /**
   * Called once, as soon as agy's exit is known: the init's report, or the chain's own exit,
   * whichever comes first (the chain and the pipes may still be ending).
   */
  onExitKnown: (() => void) | null = null;
  private exitTold = false;
  private openStreams = 2;
  private drainTimer: NodeJS.Timeout | null = null;
  private onEnd: ((exit: WorkerExit) => void) | null = null;

  /** Spawns the chain; throws with the OS error text when even that fails. */
  static spawn(spec: WorkerSpec, signalNumbers: Record<string, number>): WorkerProcess {
    if (parksAtInit(spec.plan)) return WorkerProcess.park(spec, signalNumbers).go(spec.cwd, spec.command);
    const argv = launchArgv(spec.plan, { dispatcherPid: spec.dispatcherPid, lockDir: spec.cwd, command: spec.command });
    const stdio: ('pipe' | 'ignore')[] = spec.plan.launcher ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'];
    const child = spawn(argv[0]!, argv.slice(1), { cwd: spec.cwd, env: spec.env, stdio, detached: true });
    const worker = new WorkerProcess(child, spec.plan, signalNumbers);
    worker.given = true;
    return worker;
  }

  /**
   * Starts `spec.plan`'s isolated chain without a worker: it waits at its init's `ready` for
   * `go`. Forked from `forker` when it serves the plan (forker.ts), else spawned. Throws with the
   * OS error text when the spawn itself fails.
   */
  static park(spec: ParkSpec, signalNumbers: Record<string, number>, forker: ChainForker | null = null): WorkerProcess {
    return new WorkerProcess(forked(spec, forker) ?? spawnChain(spec), spec.plan, signalNumbers);
  }

  /** Give a parked chain its worker: agy runs `command` in `dir`, which its tree holds locked. */
  go(dir: string, command: readonly string[]): this {
    this.given = true;
    const stdin = this.child.stdin;
    // A chain gone by now fails its start (`started`); its closed stdin must not throw here.
    stdin?.on('error', () => undefined);
    // The prompt follows on the same stdin (sendInput); the init reads exactly the header.
    stdin?.write(initHeader(dir, command));
    return this;
  }

  /**
   * A parked chain that will get no worker (the dispatch ended before its launch): its init
   * would end at the end of its stdin anyway; the whole chain is killed now.
   */
  abandon(): void {
    if (this.given || this.pid <= 0) return;
    this.given = true;
    this.discardOutput();
    if (this.exitSeen === null) signalGroup(this.pid, 'SIGKILL');
  }

  /**
   * `ready` as the isolation probe: a chain not ready within the probe's bound is abandoned
   * and counts as a no.
   */
  readyInTime(): Promise<ProbeResult> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ProbeResult>((resolve) => {
      timer = setTimeout(() => {
        this.abandon();
        resolve({ ok: false, why: `the launch chain was not ready within ${PROBE_TIMEOUT_MS / 1000}s`, stdout: '' });
      }, PROBE_TIMEOUT_MS);
    });
    return Promise.race([this.ready, late]).finally(() => clearTimeout(timer));
  }

  private constructor(
    child: ChildProcess,
    plan: LaunchPlan,
    private readonly signalNumbers: Record<string, number>,
  ) {
    this.child = child;
    this.keeper = plan.launcher && plan.isolation.kind === 'none';
    this.ready = new Promise<ProbeResult>((resolve) => {
      this.resolveReady = resolve;
    });
    // Not a parked chain (or it could not start): nothing will say ready.
    if (!parksAtInit(plan) || child.pid === undefined) this.resolveReady({ ok: false, why: 'no parked chain', stdout: '' });
    this.started = new Promise<WorkerStart>((resolve) => {
      child.once('error', (error) => {
        if (child.pid === undefined) resolve({ kind: 'launch-failed', why: errorText(error) });
      });
      if (child.pid === undefined) return;
      const status = child.stdio[3] as Readable | null | undefined;
      if (!plan.launcher || status == null) {
        resolve({ kind: 'started' });
        return;
      }
      this.readStatus(status, resolve);
    });
    this.pid = child.pid ?? -1;
    child.on('exit', (code, signal) => {
      this.exitSeen = { code, signal };
      this.tellExit();
      // Nothing the worker started may outlive it (or the dispatcher).
      if (this.pid > 0) signalGroup(this.pid, 'SIGKILL');
      if (this.reportedPid !== null) signalGroup(this.reportedPid, 'SIGKILL');
      if (this.openStreams > 0) {
        this.drainTimer = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        }, PIPE_DRAIN_MS);
      }
      this.maybeEnd();
    });
  }

  get launched(): boolean {
    return this.pid > 0;
  }

  private tellExit(): void {
    if (this.exitTold) return;
    this.exitTold = true;
    this.onExitKnown?.();
  }

  /** agy has exited (its keeper or init may still be cleaning up). */
  get exited(): boolean {
    return this.exitSeen !== null || this.reported !== null;
  }

  /**
   * The pid for `worker-pid-unverified`: agy's own where the host can see it, otherwise the
   * launch chain's leader, whose death ends the worker's namespace.
   */
  get workerPid(): number {
    return this.keeper && this.reportedPid !== null ? this.reportedPid : this.pid;
  }

  /** The launcher's and the init's lines on fd 3. */
  private readStatus(status: Readable, resolve: (start: WorkerStart) => void): void {
    let buffered = '';
    let settled = false;
    const settle = (start: WorkerStart): void => {
      if (settled) return;
      settled = true;
      resolve(start);
    };
    status.setEncoding('utf8');
    status.on('data', (text: string) => {
      buffered += text;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const [word, ...rest] = line.split(' ');
        const detail = rest.join(' ');
        if (word === 'ready') {
          this.resolveReady({ ok: true, why: '', stdout: '' });
          continue;
        }
        if (word === 'locked') continue;
        // The launcher or the init would not start anything (isolation.ts): the probe's no, with why.
        if (word === 'refused') this.resolveReady({ ok: false, why: detail, stdout: '' });
        if (word === 'busy') settle({ kind: 'busy' });
        else if (word === 'lock-error') settle({ kind: 'launch-failed', why: `could not lock the working directory: ${detail}` });
        else if (word === 'exec-failed' || word === 'refused') settle({ kind: 'launch-failed', why: detail });
        else if (word === 'started') {
          const pid = Number(detail);
          if (detail !== '' && Number.isInteger(pid) && pid > 0) this.reportedPid = pid;
          settle({ kind: 'started' });
        }
        else if (word === 'exit') this.reported = { code: Number(detail), signal: null };
        else if (word === 'signal') this.reported = { code: null, signal: signalName(Number(detail), this.signalNumbers) ?? 'SIGKILL' };
        if (this.reported !== null) this.tellExit();
      }
      // Bounded: the launcher writes a few short lines; anything else is not ours to keep.
      if (buffered.length > 4096) buffered = '';
    });
    const closed = (): void => {
      // A chain that ends before its init is ready answers the isolation probe: no.
      this.resolveReady({ ok: false, why: 'the launch chain ended before its init was ready', stdout: '' });
      settle({ kind: 'launch-failed', why: 'the worker launcher stopped before starting agy' });
    };
    status.on('end', closed);
    status.on('close', closed);
    status.on('error', closed);
  }

  /** Pass the worker's output on as it arrives; call once, after `started`. */
  pipeOutput(onStdout: (chunk: Buffer) => void, onStderr: (chunk: Buffer) => void): void {
    this.pump(this.child.stdout, onStdout);
    this.pump(this.child.stderr, onStderr);
  }

  private pump(stream: Readable | null, sink: (chunk: Buffer) => void): void {
    if (stream === null) {
      this.openStreams -= 1;
      return;
    }
    stream.on('data', sink);
    let counted = false;
    const done = (): void => {
      if (counted) return;
      counted = true;
      this.openStreams -= 1;
      this.maybeEnd();
    };
    stream.on('end', done);
    stream.on('close', done);
    stream.on('error', done);
  }

  /** Write the prompt and close stdin; `onError` hears a failed write (once). */
  sendInput(payload: string, onError: (error: Error) => void): void {
    const stdin = this.child.stdin!;
    let failed = false;
    stdin.on('error', (error) => {
      if (failed) return;
      failed = true;
      onError(error);
    });
    stdin.end(payload, 'utf8');
  }

  /** Never read the output (agy did not start): let the pipes go. */
  discardOutput(): void {
    this.child.stdin?.destroy();
    this.pipeOutput(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Signal the worker's whole tree; false when it is gone. A keeper relays SIGTERM, SIGINT and
   * SIGHUP to agy's group and answers SIGUSR2 by killing the whole tree (it must never be
   * SIGKILLed itself: it is what finds the processes that left agy's group).
   */
  signal(signal: NodeJS.Signals): boolean {
    if (this.pid <= 0) return false;
    if (this.keeper && this.exitSeen === null) return signalGroup(this.pid, signal === 'SIGKILL' ? 'SIGUSR2' : signal);
    const sent = signalGroup(this.pid, signal);
    return this.reportedPid !== null ? signalGroup(this.reportedPid, signal) || sent : sent;
  }

  /** Resolves once the worker has exited and its pipes are drained (or given up on). */
  finished(): Promise<WorkerExit> {
    return new Promise((resolve) => {
      this.onEnd = resolve;
      this.maybeEnd();
    });
  }

  private maybeEnd(): void {
    if (this.exitSeen === null || this.openStreams > 0 || this.onEnd === null) return;
    if (this.drainTimer !== null) clearTimeout(this.drainTimer);
    const end = this.onEnd;
    this.onEnd = null;
    // Behind a namespace init the chain's own status is the init's: the init's report is agy's.
    end(this.reported ?? this.exitSeen);
  }
}
