// The driver's side of its supervisor (supervisor.ts): start it, hand it units on their private
// socket, hear each unit's end, and notice at once when the supervisor itself dies.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { signalExitCode } from '@prun/kit/cli';
import { processStartTime } from '../units.js';
import { lineSplitter, readHostedRecord, supervisorPaths, supervisorsRoot, type EndNotice, type StartRequest, type SupervisorIdentity } from './records.js';

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

/** How long the driver waits at its end for its idle supervisor to exit. */
const CLOSE_WAIT_MS = 5000;

/** Told once per unit handed over: its dispatch's exit code, or the supervisor's when it died first. */
export type UnitEnded = (id: string, attempt: number, exitCode: number) => void;

export class SupervisorClient {
  private readonly waiting = new Map<string, number>();
  private closed = false;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly batchDir: string,
    private readonly child: ChildProcess,
    readonly identity: SupervisorIdentity,
    private readonly onEnd: UnitEnded,
  ) {
    const channel = this.channel;
    channel.setEncoding('utf8');
    // Notices are short; anything longer is not one.
    channel.on('data', lineSplitter((line) => this.onNotice(line), 64 * 1024));
    channel.on('error', () => undefined);
    this.exited = new Promise((resolveExit) => {
      // 'close': the process has exited and every notice it wrote has been read.
      child.on('close', (code, signal) => {
        this.closed = true;
        this.settleRest(code ?? (signal ? signalExitCode(signal) : 128));
        resolveExit();
      });
    });
  }

  /**
   * Start the batch's supervisor: detached (its own session, so a terminal's Ctrl-C reaches only
   * the driver, which passes it on), working in the batch directory, its own messages appended to
   * `supervisors/log`. Throws when it cannot be started.
   */
  static start(batchDir: string, env: NodeJS.ProcessEnv, onEnd: UnitEnded): SupervisorClient {
    const root = supervisorsRoot(batchDir);
    mkdirSync(root, { recursive: true });
    const log = openSync(join(root, 'log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [MAIN], { cwd: batchDir, env, detached: true, stdio: ['ignore', log, log, 'pipe'] });
    } finally {
      closeSync(log);
    }
    child.on('error', () => undefined);
    const start = child.pid === undefined ? null : processStartTime(child.pid);
    if (child.pid === undefined || start === null) {
      child.kill('SIGKILL');
      throw new Error('the supervisor process did not start');
    }
    return new SupervisorClient(batchDir, child, { pid: child.pid, start }, onEnd);
  }

  private get channel(): Socket {
    return this.child.stdio[3] as Socket;
  }

  /** Whether the supervisor can still take units. */
  get usable(): boolean {
    return !this.closed && !this.channel.destroyed;
  }

  /** Hand a unit over; its end comes through `onEnd`, once. */
  start(request: StartRequest): void {
    this.waiting.set(request.id, request.attempt);
    this.channel.write(`${JSON.stringify(request)}\n`);
  }

  private onNotice(line: string): void {
    let notice: EndNotice;
    try {
      notice = JSON.parse(line) as EndNotice;
    } catch {
      return;
    }
    if (this.waiting.get(notice.id) !== notice.attempt) return;
    this.waiting.delete(notice.id);
    this.onEnd(notice.id, notice.attempt, notice.exit_code);
  }

  /**
   * The supervisor has died with units still waiting: those it finished have a record; the rest
   * died with it (their workers by the parent-death signal) and end with its exit code, as a
   * killed dispatcher's unit does.
   */
  private settleRest(exitCode: number): void {
    const paths = supervisorPaths(this.batchDir, this.identity);
    for (const [id, attempt] of [...this.waiting]) {
      this.waiting.delete(id);
      const record = readHostedRecord(paths.unit(id));
      const ended = record !== null && record.attempt === attempt && record.state === 'ended' && record.exit_code !== null;
      this.onEnd(id, attempt, ended ? record.exit_code! : exitCode);
    }
  }

  /** Signal the supervisor process (every unit it hosts stops as its dispatcher would). */
  signal(signal: NodeJS.Signals): void {
    try {
      process.kill(this.identity.pid, signal);
    } catch {
      // already gone
    }
  }

  /** No more units: let it go (it exits once idle) and wait, briefly, for it to be gone. */
  async close(): Promise<void> {
    this.channel.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolveWait) => (timer = setTimeout(resolveWait, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    this.child.unref();
    this.channel.destroy();
  }
}
