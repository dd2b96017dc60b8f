// The detached runner of one run: it owns pi's stdin and stdout for the whole run, holds the
// job's lock for its whole life (inherited as fd 3, released only when this process ends), serves
// the control socket, records progress, and records the run's end with exit_code last.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync, openSync, closeSync, statSync } from 'node:fs';
import net from 'node:net';
import { constants as osConstants } from 'node:os';
import { delimiter, join } from 'node:path';
import { NOT_RUNNING } from './errors.js';
import { jobFile, piBin, socketPath } from './paths.js';
import { RunTracker, settledStatus, type ControlReply, type RpcEffects, type RpcRecord, type Usage } from './rpc.js';
import { appendProgress, readJobRecord, recordEnd, type JobRecord } from './state.js';
import { appendText, excerpt, formatSeconds, readInt, readJson, readText, removeFile, utcNow, writeAtomic } from './text.js';
import { pyDumps } from './control.js';
import type { Timings } from './timing.js';

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT'];
/** Removed from the agent's environment so the herdr extension inside it does not report for the caller's pane. */
const REMOVED_ENV = ['HERDR_ENV', 'HERDR_PANE_ID', 'HERDR_SOCKET_PATH'];
// pi must not inherit the lock (fd 3): Node cannot mark an inherited descriptor close-on-exec,
// so a one-line shell closes it and then becomes pi.
const EXEC_WITHOUT_RUNNER_FDS = 'exec 3<&-; exec "$@"';

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

/** Why spawning `bin` would fail, checked up front because the shell in between hides it. */
export function unstartable(bin: string, env: NodeJS.ProcessEnv): string | undefined {
  const executable = (path: string): boolean => {
    try {
      accessSync(path, fsConstants.X_OK);
      return statSync(path).isFile();
    } catch {
      return false;
    }
  };
  if (bin.includes('/')) return executable(bin) ? undefined : `no executable file at ${bin}`;
  const dirs = (env['PATH'] ?? '').split(delimiter).filter(Boolean);
  return dirs.some((dir) => executable(join(dir, bin))) ? undefined : `${bin} was not found on PATH`;
}

type Outcome = { kind: 'finish'; status: string; error?: string } | { kind: 'eof' } | { kind: 'killed'; reason: string };

export class Runner {
  readonly job: JobRecord;
  readonly prompt: string;
  readonly tracker: RunTracker;
  private server: net.Server | undefined;
  private readonly connections = new Set<net.Socket>();
  private readonly pendingAcks = new Map<string, net.Socket>();
  private proc: ChildProcess | undefined;
  private procExit: Promise<void> = Promise.resolve();
  private exitStatus: number | undefined;
  private stdinOpen = false;
  private eof = false;
  private serial = 0;
  private signal: NodeJS.Signals | undefined;
  private callerGone = false;
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
    private readonly timings: Timings,
    private readonly env: NodeJS.ProcessEnv,
  ) {
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

  async listen(): Promise<void> {
    const path = socketPath(this.jobDir);
    mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
    // The lock is ours, so a leftover socket file belongs to a runner that is gone.
    removeFile(path);
    // Half-open: a client that ends its side after the request (socat, nc -U) still gets the
    // answer, which for a steer comes only once pi has answered.
    const server = net.createServer({ allowHalfOpen: true }, (conn) => this.onConnection(conn));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
  }

  private onConnection(conn: net.Socket): void {
    this.connections.add(conn);
    let data = '';
    let handled = false;
    conn.setEncoding('utf8');
    const handle = (): void => {
      if (handled) return;
      handled = true;
      const line = data.split('\n')[0] ?? '';
      if (!line && !data) {
        this.connections.delete(conn);
        conn.destroy();
        return;
      }
      let request: unknown;
      try {
        request = JSON.parse(line);
      } catch {
        request = undefined;
      }
      this.handleRequest(conn, request);
    };
    conn.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\n')) handle();
    });
    conn.on('end', handle);
    conn.on('error', () => this.connections.delete(conn));
    conn.on('close', () => this.connections.delete(conn));
  }

  private handleRequest(conn: net.Socket, request: unknown): void {
    const fields = request !== null && typeof request === 'object' && !Array.isArray(request) ? (request as RpcRecord) : undefined;
    const kind = fields?.['type'];
    if (this.finishing || this.tracker.settled) {
      this.reply(conn, { ok: false, error: NOT_RUNNING });
    } else if (kind === 'steer') {
      const raw = fields?.['message'];
      const message = raw === undefined ? '' : typeof raw === 'string' ? raw : JSON.stringify(raw);
      const id = this.newId('steer');
      if (this.send({ id, type: 'steer', message })) {
        this.pendingAcks.set(id, conn);
        this.progress(`steer: ${excerpt(message)}`);
      } else {
        this.reply(conn, { ok: false, error: NOT_RUNNING });
      }
    } else if (kind === 'abort') {
      this.abortRequested = true;
      this.progress('abort requested');
      this.sendAbort();
      // Answered at once: pi answers its own abort only after the run settled.
      this.reply(conn, { ok: true, disposition: 'requested' });
      this.evaluate();
    } else if (kind === 'kill') {
      this.killRequested = true;
      this.reply(conn, { ok: true, disposition: 'stopping' });
      this.evaluate();
    } else {
      this.reply(conn, { ok: false, error: `unknown request type: ${kind === undefined ? 'None' : String(kind)}` });
    }
  }

  private reply(conn: net.Socket, reply: ControlReply): void {
    this.connections.delete(conn);
    if (conn.destroyed) return;
    conn.on('error', () => undefined);
    conn.end(pyDumps(reply) + '\n');
    setTimeout(() => conn.destroy(), 1000).unref();
  }

  /** Answer every open request with NOT_RUNNING and remove the socket (the lock is still ours). */
  private async closeControl(): Promise<void> {
    for (const conn of this.pendingAcks.values()) this.reply(conn, { ok: false, error: NOT_RUNNING });
    this.pendingAcks.clear();
    // Connections whose request line has not arrived get a moment to send it, so the command
    // reads the answer instead of a reset.
    const open = [...this.connections];
    const end = Date.now() + 500;
    while (open.some((c) => this.connections.has(c)) && Date.now() < end) await delay(20);
    for (const conn of this.connections) this.reply(conn, { ok: false, error: NOT_RUNNING });
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    removeFile(socketPath(this.jobDir));
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
      const conn = this.pendingAcks.get(effects.ack.id);
      if (conn) {
        this.pendingAcks.delete(effects.ack.id);
        this.reply(conn, effects.ack.reply);
      }
    }
  }

  private startPi(stderrFd: number): void {
    const argv = piArgv(this.jobDir, this.job, piBin(this.env));
    const proc = spawn('/bin/sh', ['-c', EXEC_WITHOUT_RUNNER_FDS, 'sh', ...argv], {
      cwd: this.job.cwd ?? process.cwd(),
      env: childEnv(this.jobDir, this.job, this.env),
      stdio: ['pipe', 'pipe', stderrFd],
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
    let pending: Buffer = Buffer.alloc(0);
    // Records end at LF only; U+2028 and U+2029 are valid inside JSON strings.
    proc.stdout?.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let nl = pending.indexOf(0x0a);
      while (nl >= 0) {
        const line = pending.subarray(0, nl).toString('utf8');
        pending = pending.subarray(nl + 1);
        this.apply(this.tracker.handleLine(line));
        if (!this.finishing) this.evaluate();
        nl = pending.indexOf(0x0a);
      }
    });
    proc.stdout?.on('end', () => {
      if (pending.length) this.apply(this.tracker.handleLine(pending.toString('utf8')));
      pending = Buffer.alloc(0);
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
      await delay(0);
      if (exited) break;
      if (signal) {
        try {
          proc.kill(signal);
        } catch {
          // Gone already.
        }
      }
      await Promise.race([this.procExit, delay(grace * 1000)]);
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
    await this.listen();
    const bin = piBin(this.env);
    // Opened before pi starts, as the original does, so every run that got this far has one.
    const stderrFd = openSync(jobFile(this.jobDir, 'stderr.txt'), 'w');
    try {
      const problem = unstartable(bin, this.env);
      if (problem) return this.conclude('failed', `could not start ${bin}: ${problem}`);
      this.startPi(stderrFd);
    } finally {
      closeSync(stderrFd);
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
      await Promise.race([this.procExit, delay(this.timings.piExitGraceS * 1000)]);
      if (this.exitStatus === undefined) this.proc.kill('SIGKILL');
    }
  }

  async shutdown(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    await this.closeControl();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Entry of the detached runner: `__runner JOB_DIR LOCK_FD [CALLER_FD]`. The job directory follows
 * `__runner` and a space, so a person can find a stuck runner with `pkill -f`.
 */
export async function runnerMain(argv: string[], timings: Timings, env: NodeJS.ProcessEnv): Promise<void> {
  const [jobDir, , callerText] = argv;
  if (!jobDir) throw new Error('the runner needs a job directory');
  const callerFd = callerText === undefined ? undefined : Number(callerText);
  let runner: Runner | undefined;
  const fail = async (error: unknown): Promise<void> => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    appendText(jobFile(jobDir, 'runner.log'), `${utcNow()}\n${text}\n\n`);
    if (runner) await runner.emergencyStop();
    // Record the failure before the lock is released (when this process exits).
    if (runner) runner.conclude('failed', `the runner failed; see ${jobFile(jobDir, 'runner.log')}`);
    else recordEnd(jobDir, 'failed', `the runner failed; see ${jobFile(jobDir, 'runner.log')}`);
  };
  process.on('uncaughtException', (error) => {
    void fail(error).finally(() => process.exit(1));
  });
  try {
    runner = new Runner(jobDir, callerFd, timings, env);
    await runner.run();
  } catch (error) {
    await fail(error);
  } finally {
    await runner?.shutdown();
  }
}
