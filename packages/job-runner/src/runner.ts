// The detached runner of one run: it owns pi's stdin and stdout for the whole run, holds the
// job's lock for its whole life (inherited as fd 3, released only when this process ends), serves
// the control socket, records progress, and records the run's end with exit_code last.
import { STOP_SIGNALS } from '@prun/kit/cli';
import { which } from '@prun/kit/fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import net from 'node:net';
import { constants as osConstants } from 'node:os';
import { ControlServer } from './control/server.js';
import { pyDumps, type ControlReply } from './control/protocol.js';
import { NOT_RUNNING } from './errors.js';
import { LineSplitter, MAX_RECORD_BYTES } from './lines.js';
import { jobFile, piBin } from './paths.js';
import { RunTracker, settledStatus, type RpcEffects, type RpcRecord, type Usage } from './rpc.js';
import { appendProgress, readJobRecord, recordEnd, type JobRecord } from './state.js';
import { excerpt, formatSeconds, readInt, readJson, readText, writeAtomic } from './text.js';
import { sleep, type Timings } from './timing.js';

/** Removed from the agent's environment so the herdr extension inside it does not report for the caller's pane. */
const REMOVED_ENV = ['HERDR_ENV', 'HERDR_PANE_ID', 'HERDR_SOCKET_PATH'];
/**
 * The runner's own inherited descriptors (the job's lock, the control socket). pi gets /dev/null
 * in their places: a pi that held the lock would make the job look running after its runner died.
 */
export const RUNNER_FDS = [3, 4];

export function childEnv(jobDir: string, job: JobRecord, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const key of REMOVED_ENV) delete out[key];
  out['MULTI_AGENT_JOB'] = jobDir;
  out['MULTI_AGENT_DEPTH'] = String(job.depth ?? 1);
  out['PI_MINIMAL_PERMISSION_SYSTEM_NONINTERACTIVE'] = '1';
  if (job.cwd) out['PWD'] = job.cwd;
  return out;
}

export function piArgv(jobDir: string, job: JobRecord, bin: string): string[] {
  const argv = [bin, '--mode', 'rpc', '--session-dir', job.session_dir ?? ''];
  if (job.fork && job.run_kind === 'new') argv.push('--fork', job.fork);
  argv.push('--session-id', job.name ?? '');
  argv.push(...(job.pi_args ?? []));
  argv.push('--append-system-prompt', jobFile(jobDir, 'append-prompt.md'));
  return argv;
}

/** Why spawning `bin` from `cwd` would fail, said up front in the run's output. */
export function unstartable(bin: string, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (which(bin, { env, cwd }) !== null) return undefined;
  return bin.includes('/') ? `no executable file at ${bin}` : `${bin} was not found on PATH`;
}

/** Wait for pi's exit, at most `seconds`; the timer goes with it, so nothing keeps the runner alive. */
async function exitWithin(exit: Promise<void>, seconds: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, seconds * 1000)))]);
  clearTimeout(timer);
}

type Outcome = { kind: 'finish'; status: string; error?: string } | { kind: 'eof' } | { kind: 'killed'; reason: string };

export class Runner {
  readonly job: JobRecord;
  readonly prompt: string;
  readonly tracker: RunTracker;
  private readonly control: ControlServer;
  /** Steers forwarded to pi, by rpc id: who is waiting for pi's answer. */
  private readonly pendingAcks = new Map<string, (reply: ControlReply) => void>();
  private proc: ChildProcess | undefined;
  private procExit: Promise<void> = Promise.resolve();
  private exitStatus: number | undefined;
  private stdinOpen = false;
  private eof = false;
  private serial = 0;
  private signal: NodeJS.Signals | undefined;
  private callerGone = false;
  private caller: net.Socket | undefined;
  private killRequested = false;
  private abortSent = false;
  private abortRequested = false;
  private timingOut = false;
  private deadline: number | undefined;
  private stopDeadline: number | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  finishing = false;
  private decide: ((outcome: Outcome) => void) | undefined;

  constructor(
    readonly jobDir: string,
    private readonly callerFd: number | undefined,
    private readonly serverFd: number | undefined,
    private readonly timings: Timings,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.control = new ControlServer(jobDir, (request, answer) => this.handleRequest(request, answer));
    const job = readJobRecord(jobDir);
    if (!job) throw new Error(`job ${jobDir} has no readable job.json`);
    this.job = job;
    this.prompt = readText(jobFile(jobDir, 'prompt.txt')) ?? '';
    const usage = readJson(jobFile(jobDir, 'usage.json'));
    this.tracker = new RunTracker(usage && typeof usage === 'object' && !Array.isArray(usage) ? (usage as Usage) : {});
  }

  private progress(message: string): void {
    appendProgress(this.jobDir, message);
  }

  // -- signals, caller, control socket --

  private installSignals(): void {
    for (const signal of STOP_SIGNALS) {
      process.on(signal, () => {
        this.signal ??= signal;
        this.evaluate();
      });
    }
  }

  private watchCaller(): void {
    if (this.callerFd === undefined) return;
    const caller = new net.Socket({ fd: this.callerFd, readable: true, writable: false });
    this.caller = caller;
    const gone = (): void => {
      if (this.callerGone) return;
      this.callerGone = true;
      caller.destroy();
      this.evaluate();
    };
    caller.on('data', () => undefined);
    caller.on('end', gone);
    caller.on('close', gone);
    caller.on('error', gone);
  }

  private handleRequest(request: unknown, answer: (reply: ControlReply) => void): void {
    const fields = request !== null && typeof request === 'object' && !Array.isArray(request) ? (request as RpcRecord) : undefined;
    const kind = fields?.['type'];
    if (this.finishing || this.tracker.settled) {
      answer({ ok: false, error: NOT_RUNNING });
    } else if (kind === 'steer') {
      const raw = fields?.['message'];
      const message = raw === undefined ? '' : typeof raw === 'string' ? raw : JSON.stringify(raw);
      const id = this.newId('steer');
      if (this.send({ id, type: 'steer', message })) {
        this.pendingAcks.set(id, answer);
        this.progress(`steer: ${excerpt(message)}`);
      } else {
        answer({ ok: false, error: NOT_RUNNING });
      }
    } else if (kind === 'abort') {
      this.abortRequested = true;
      this.progress('abort requested');
      this.sendAbort();
      // Answered at once: pi answers its own abort only after the run settled.
      answer({ ok: true, disposition: 'requested' });
      this.evaluate();
    } else if (kind === 'kill') {
      this.killRequested = true;
      answer({ ok: true, disposition: 'stopping' });
      this.evaluate();
    } else {
      answer({ ok: false, error: `unknown request type: ${kind === undefined ? 'None' : String(kind)}` });
    }
  }

  // -- pi --

  private newId(kind: string): string {
    this.serial += 1;
    return `${kind}-${this.serial}`;
  }

  private send(record: RpcRecord): boolean {
    const stdin = this.proc?.stdin;
    if (!this.stdinOpen || !stdin || stdin.destroyed || !stdin.writable) return false;
    stdin.write(pyDumps(record) + '\n');
    return true;
  }

  private closeStdin(): void {
    this.stdinOpen = false;
    this.proc?.stdin?.end();
  }

  private sendAbort(): void {
    if (this.abortSent) return;
    this.abortSent = true;
    // After an abort pi goes on with queued messages unless the queue is cleared first.
    this.send({ id: this.newId('clear_queue'), type: 'clear_queue' });
    this.send({ id: this.newId('abort'), type: 'abort' });
    this.stopDeadline = Date.now() + this.timings.settleS * 1000;
    this.timer(this.timings.settleS);
  }

  private timer(seconds: number): void {
    const ms = Math.min(Math.max(0, seconds * 1000) + 5, 2 ** 31 - 1);
    this.timers.push(setTimeout(() => this.evaluate(), ms));
  }

  private apply(effects: RpcEffects): void {
    for (const line of effects.progress) this.progress(line);
    for (const record of effects.send) this.send(record);
    if (effects.ack) {
      const answer = this.pendingAcks.get(effects.ack.id);
      if (answer) {
        this.pendingAcks.delete(effects.ack.id);
        answer(effects.ack.reply);
      }
    }
  }

  private startPi(stderrFd: number, devNull: number): void {
    const [bin, ...args] = piArgv(this.jobDir, this.job, piBin(this.env));
    // pi is started directly, with the environment exactly as given: a shell in between would
    // drop variables whose names are not shell identifiers (`my.var`).
    const proc = spawn(bin as string, args, {
      cwd: this.job.cwd ?? process.cwd(),
      env: childEnv(this.jobDir, this.job, this.env),
      stdio: ['pipe', 'pipe', stderrFd, ...RUNNER_FDS.map(() => devNull)],
      // Its own session: signals meant for the runner never reach pi; the runner stops it through stdin.
      detached: true,
    });
    this.proc = proc;
    this.stdinOpen = true;
    this.procExit = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exitStatus = code ?? -(signal ? (osConstants.signals[signal] ?? 0) : 0);
        resolve();
      });
      proc.once('error', () => resolve());
    });
    proc.stdin?.on('error', () => {
      this.stdinOpen = false;
    });
    const lines = new LineSplitter({
      line: (text) => {
        this.apply(this.tracker.handleLine(text));
        if (!this.finishing) this.evaluate();
      },
      skipped: (skipped) => this.apply(this.tracker.handleSkipped(skipped, MAX_RECORD_BYTES)),
    });
    proc.stdout?.on('data', (chunk: Buffer) => lines.push(chunk));
    proc.stdout?.on('end', () => {
      lines.end();
      this.eof = true;
      this.evaluate();
    });
  }

  /** Close pi's stdin, which makes it shut down; then SIGTERM, then SIGKILL. */
  private async stopPi(): Promise<void> {
    this.closeStdin();
    const proc = this.proc;
    if (!proc || proc.pid === undefined) return;
    const steps: [NodeJS.Signals | undefined, number][] = [
      [undefined, this.timings.piExitGraceS],
      ['SIGTERM', this.timings.piTermGraceS],
      ['SIGKILL', 0],
    ];
    let exited = false;
    void this.procExit.then(() => {
      exited = true;
    });
    for (const [signal, grace] of steps) {
      await sleep(0);
      if (exited) break;
      if (signal) {
        try {
          proc.kill(signal);
        } catch {
          // Gone already.
        }
      }
      await exitWithin(this.procExit, grace);
    }
    await this.procExit;
  }

  // -- the run --

  /** Decide, as the original's loop does after every event, whether the run ends now. */
  private evaluate(): void {
    if (this.finishing || !this.decide) return;
    const decide = this.decide;
    if (this.signal) return decide({ kind: 'killed', reason: `stopped by ${this.signal}` });
    if (this.callerGone) return decide({ kind: 'killed', reason: "stopped: the caller's command ended" });
    if (this.killRequested) return decide({ kind: 'killed', reason: 'stopped by kill' });
    const now = Date.now();
    if (this.deadline !== undefined && now >= this.deadline && !this.timingOut) {
      this.timingOut = true;
      this.progress(`timeout after ${formatSeconds(this.job.timeout)}s; aborting`);
      this.sendAbort();
    }
    if (this.stopDeadline !== undefined && now >= this.stopDeadline) {
      this.progress('agent did not settle after the abort');
      return decide({ kind: 'finish', status: this.timingOut ? 'timeout' : 'aborted' });
    }
    if (this.tracker.settled) {
      return decide({
        kind: 'finish',
        status: settledStatus({ timingOut: this.timingOut, abortRequested: this.abortRequested, lastStop: this.tracker.lastStop }),
      });
    }
    const response = this.tracker.promptResponse;
    if (response && !response['success']) {
      const error = typeof response['error'] === 'string' && response['error'] ? response['error'] : 'prompt rejected';
      return decide({ kind: 'finish', status: 'failed', error });
    }
    const data = response?.['data'];
    if (data && typeof data === 'object' && (data as RpcRecord)['disposition'] === 'handled') {
      return decide({ kind: 'finish', status: 'done' });
    }
    if (this.eof) return decide({ kind: 'eof' });
  }

  async run(): Promise<string> {
    this.installSignals();
    this.watchCaller();
    await this.control.listen(this.serverFd);
    const bin = piBin(this.env);
    // Opened before pi starts, as the original does, so every run that got this far has one.
    const stderrFd = openSync(jobFile(this.jobDir, 'stderr.txt'), 'w');
    const devNull = openSync('/dev/null', 'r');
    try {
      const problem = unstartable(bin, this.env, this.job.cwd ?? process.cwd());
      if (problem) return this.conclude('failed', `could not start ${bin}: ${problem}`);
      this.startPi(stderrFd, devNull);
    } finally {
      closeSync(stderrFd);
      closeSync(devNull);
    }
    const runs = readInt(jobFile(this.jobDir, 'runs'));
    this.progress(`run ${runs === undefined ? 'None' : runs} started (${this.job.mode ?? '?'})`);
    this.send({ id: 'prompt', type: 'prompt', message: this.prompt });
    const timeout = this.job.timeout;
    if (timeout) {
      this.deadline = Date.now() + timeout * 1000;
      this.timer(timeout);
    }
    const outcome = await new Promise<Outcome>((resolve) => {
      this.decide = (o) => {
        this.finishing = true;
        resolve(o);
      };
      this.evaluate();
    });
    for (const t of this.timers) clearTimeout(t);
    if (outcome.kind === 'killed') {
      this.progress(outcome.reason);
      await this.stopPi();
      return this.conclude('killed', this.tracker.lastText ?? '');
    }
    if (outcome.kind === 'eof') {
      await this.stopPi();
      const stderr = readText(jobFile(this.jobDir, 'stderr.txt')) ?? '';
      const tail = stderr.replace(/\n+$/, '').split('\n').slice(-20).join('\n');
      let output = `pi exited before the run finished (exit status ${this.exitStatus ?? 'None'}).`;
      if (tail) output += ` Last lines of its stderr:\n\n${tail}`;
      return this.conclude('failed', output);
    }
    await this.stopPi();
    let output = this.tracker.lastText ?? '';
    if (outcome.status === 'failed') {
      const detail = outcome.error ?? this.tracker.lastError;
      if (detail) output = (output ? `${output}\n\n` : '') + `error: ${detail}`;
    }
    return this.conclude(outcome.status, output);
  }

  conclude(status: string, output: string): string {
    this.finishing = true;
    writeAtomic(jobFile(this.jobDir, 'usage.json'), JSON.stringify(this.tracker.usage, null, 2) + '\n');
    if (this.tracker.modelUsed) writeAtomic(jobFile(this.jobDir, 'model'), this.tracker.modelUsed + '\n');
    recordEnd(this.jobDir, status, output);
    return status;
  }

  /** Best-effort stop of pi after an unexpected error in the runner. */
  async emergencyStop(): Promise<void> {
    this.finishing = true;
    this.closeStdin();
    if (this.proc?.pid !== undefined && this.exitStatus === undefined) {
      await exitWithin(this.procExit, this.timings.piExitGraceS);
      if (this.exitStatus === undefined) this.proc.kill('SIGKILL');
    }
  }

  async shutdown(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.caller?.destroy();
    for (const answer of this.pendingAcks.values()) answer({ ok: false, error: NOT_RUNNING });
    this.pendingAcks.clear();
    await this.control.close();
  }
}
