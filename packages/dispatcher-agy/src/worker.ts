/**
 * One worker process: spawned through the launch chain (isolation.ts) as the leader of its own
 * process group, with its stdio piped and a status pipe on fd 3; signalled as a group; its
 * exit known exactly even when a namespace init stands between it and us.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { launchArgv, type LaunchPlan } from './isolation.js';
import { errorText, signalGroup } from './process.js';

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

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>();

function signalName(n: number, names: Record<string, number>): NodeJS.Signals | null {
  if (SIGNAL_NAMES.size === 0) for (const [name, num] of Object.entries(names)) SIGNAL_NAMES.set(num, name as NodeJS.Signals);
  return SIGNAL_NAMES.get(n) ?? null;
}

export class WorkerProcess {
  readonly pid: number;
  /** Settles once the launcher has said whether agy runs. */
  readonly started: Promise<WorkerStart>;
  private readonly child: ChildProcess;
  /** No namespace: the launcher stays as agy's keeper and agy leads a group of its own. */
  private readonly keeper: boolean;
  /** agy's pid as the launcher reported it (only meaningful outside a namespace). */
  private reportedPid: number | null = null;
  private reported: WorkerExit | null = null;
  private exitSeen: WorkerExit | null = null;
  private openStreams = 2;
  private drainTimer: NodeJS.Timeout | null = null;
  private onEnd: ((exit: WorkerExit) => void) | null = null;

  /** Spawns the chain; throws with the OS error text when even that fails. */
  static spawn(spec: WorkerSpec, signalNumbers: Record<string, number>): WorkerProcess {
    const argv = launchArgv(spec.plan, { dispatcherPid: spec.dispatcherPid, lockDir: spec.cwd, command: spec.command });
    const stdio: ('pipe' | 'ignore')[] = spec.plan.launcher ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'];
    const child = spawn(argv[0]!, argv.slice(1), { cwd: spec.cwd, env: spec.env, stdio, detached: true });
    return new WorkerProcess(child, spec.plan, signalNumbers);
  }

  private constructor(
    child: ChildProcess,
    plan: LaunchPlan,
    private readonly signalNumbers: Record<string, number>,
  ) {
    this.child = child;
    this.keeper = plan.launcher && plan.isolation.kind === 'none';
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
        if (word === 'locked') continue;
        if (word === 'busy') settle({ kind: 'busy' });
        else if (word === 'lock-error') settle({ kind: 'launch-failed', why: `could not lock the working directory: ${detail}` });
        else if (word === 'exec-failed') settle({ kind: 'launch-failed', why: detail });
        else if (word === 'started') {
          const pid = Number(detail);
          if (detail !== '' && Number.isInteger(pid) && pid > 0) this.reportedPid = pid;
          settle({ kind: 'started' });
        }
        else if (word === 'exit') this.reported = { code: Number(detail), signal: null };
        else if (word === 'signal') this.reported = { code: null, signal: signalName(Number(detail), this.signalNumbers) ?? 'SIGKILL' };
      }
      // Bounded: the launcher writes a few short lines; anything else is not ours to keep.
      if (buffered.length > 4096) buffered = '';
    });
    const closed = (): void => settle({ kind: 'launch-failed', why: 'the worker launcher stopped before starting agy' });
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
