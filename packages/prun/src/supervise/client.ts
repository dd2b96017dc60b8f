// The driver's side of its supervisor (supervisor.ts): start it, hand it units on their private
// socket, hear each unit's end, and notice at once when the supervisor itself dies.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { signalExitCode } from '@prun/kit/cli';
import { processStartTime } from '../units.js';
import { lineSplitter, readHostedRecord, supervisorPaths, supervisorsRoot, type EndNotice, type StartNotice, type StartRequest, type SupervisorIdentity } from './records.js';

// The supervisor's entry (main.ts) as `pnpm build` bundles it into CommonJS (tools/bundle-bin.mjs
// --entry supervise/main): one Node start without the ES module loader, per batch.
const MAIN = fileURLToPath(new URL('../bundle-supervise-main.cjs', import.meta.url));

/** How long the driver waits at its end for its idle supervisor to exit. */
const CLOSE_WAIT_MS = 5000;

/** How the supervisor process ended when it ended before its driver let it go (kill -9, a crash). */
export interface SupervisorDeath {
  pid: number;
  /** The signal that killed it, or null when it exited. */
  signal: NodeJS.Signals | null;
  /** Its exit code when it exited. */
  code: number | null;
}

/**
 * Told once per unit handed over: its dispatch's exit code, or, when the supervisor died before
 * the dispatch ended, the supervisor's and how it died. `started` is false for a unit that
 * never started there (it waited for a worker slot, and was stopped, or the supervisor died).
 */
export type UnitEnded = (id: string, attempt: number, exitCode: number, died: SupervisorDeath | null, started: boolean) => void;

/** Told when a unit that waited in the supervisor for a worker slot has started there, and when. */
export type UnitStarted = (id: string, attempt: number, startedAt: string) => void;

/**
 * Told once, before the units it took with it are: the supervisor died, hosting `lostUnits`
 * (started, with no end recorded) and holding `unstarted` (waiting for a worker slot).
 */
export type SupervisorDied = (death: SupervisorDeath, lostUnits: string[], unstarted: string[]) => void;

export class SupervisorClient {
  /** Units handed over and not yet ended: their attempt. */
  private readonly handedOver = new Map<string, number>();
  private closed = false;
  /** The driver has let it go (close): an exit 0 from now on is its normal end. */
  private letGo = false;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly batchDir: string,
    private readonly child: ChildProcess,
    readonly identity: SupervisorIdentity,
    private readonly onEnd: UnitEnded,
    private readonly onDied: SupervisorDied,
    private readonly onStarted: UnitStarted,
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
        const death = this.letGo && code === 0 ? null : { pid: identity.pid, signal, code };
        this.settleRest(code ?? (signal ? signalExitCode(signal) : 128), death);
        resolveExit();
      });
    });
  }

  /**
   * Start the batch's supervisor: detached (its own session, so a terminal's Ctrl-C reaches only
   * the driver, which passes it on), working in the batch directory, its own messages appended to
   * `supervisors/log`. Throws when it cannot be started.
   */
  static start(batchDir: string, env: NodeJS.ProcessEnv, onEnd: UnitEnded, onDied: SupervisorDied, onStarted: UnitStarted): SupervisorClient {
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
    return new SupervisorClient(batchDir, child, { pid: child.pid, start }, onEnd, onDied, onStarted);
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
    this.handedOver.set(request.id, request.attempt);
    this.channel.write(`${JSON.stringify(request)}\n`);
  }

  private onNotice(line: string): void {
    let notice: EndNotice | StartNotice;
    try {
      notice = JSON.parse(line) as EndNotice | StartNotice;
    } catch {
      return;
    }
    if (this.handedOver.get(notice.id) !== notice.attempt) return;
    if ('started_at' in notice) {
      this.onStarted(notice.id, notice.attempt, notice.started_at);
      return;
    }
    this.handedOver.delete(notice.id);
    this.onEnd(notice.id, notice.attempt, notice.exit_code, null, notice.started !== false);
  }

  /**
   * The supervisor has ended with units still unsettled: those it finished have a record; those
   * it started and did not finish died with it (their workers by the parent-death signal) and end
   * with its exit code and how it died; those it had not started (no record of the attempt) never
   * ran. A death the driver did not ask for is told first (`onDied`), even with no unit lost.
   */
  private settleRest(exitCode: number, death: SupervisorDeath | null): void {
    const paths = supervisorPaths(this.batchDir, this.identity);
    const ends = [...this.handedOver].map(([id, attempt]) => {
      const record = readHostedRecord(paths.unit(id));
      const mine = record !== null && record.attempt === attempt;
      const recorded = mine && record.state === 'ended' && record.exit_code !== null ? record.exit_code : null;
      return { id, attempt, recorded, started: mine };
    });
    this.handedOver.clear();
    const unsettled = ends.filter((end) => end.recorded === null);
    if (death !== null) {
      this.onDied(
        death,
        unsettled.filter((end) => end.started).map((end) => end.id),
        unsettled.filter((end) => !end.started).map((end) => end.id),
      );
    }
    for (const end of ends) this.onEnd(end.id, end.attempt, end.recorded ?? exitCode, end.recorded === null ? death : null, end.started);
  }

  /** No more units: let it go (it exits once idle) and wait, briefly, for it to be gone. */
  async close(): Promise<void> {
    this.letGo = true;
    this.channel.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolveWait) => (timer = setTimeout(resolveWait, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
    this.child.unref();
    this.channel.destroy();
  }
}
