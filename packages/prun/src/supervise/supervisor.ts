// The batch's supervisor process: it hosts every unit its driver hands it, in-process through
// the dispatcher library, so a batch costs one Node process for all its running units instead of
// one per unit. It is started detached by its driver (`prun batch`), in its own session, with the
// batch directory as its working directory and one private socket to the driver on fd 3:
//
//   driver -> supervisor   {"op":"start",...} lines (supervise/records.ts StartRequest)
//   supervisor -> driver   {"id","attempt","exit_code"} once a unit has ended and its record is written
//                          {"id","attempt","started_at"} once a unit that waited for a worker slot has started
//
// The driver may hand over one unit more than there are worker slots (`slots` in each request):
// that unit waits here, unrecorded, and starts the moment a hosted unit's worker exits, before
// that unit's result is published and without waiting for the driver (README, "Supervision").
//
// It outlives its driver: a killed or crashed driver (EOF on the socket) loses no running unit.
// The supervisor then takes no more work, writes `drained`, and exits once its last unit has
// ended. Every unit's state is also in `supervisors/<pid>-<start>/units/<id>.json`, written
// before its dispatch starts and when it ends, which is what a resumed driver adopts from. Its
// workers are bound to it by the dispatcher's own chain (parent-death signal, PID namespace):
// if the supervisor is killed they die with it, and the units read as a killed dispatcher's.
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, watch, writeFileSync, writeSync, type FSWatcher } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { ChainReserve } from '@prun/dispatcher-agy';
import { CliError, EXIT_INTERNAL, EXIT_OK, STOP_SIGNALS, signalExitCode, type StopSignal } from '@prun/kit/cli';
import { isValidUnitId } from '@prun/unit-state';
import { processStartTime } from '../units.js';
import { startDispatch, type HostedDispatch } from './host.js';
import { lineSplitter, supervisorPaths, withEnvChanges, writeHostedRecord, type EndNotice, type StartNotice, type StartRequest, type SupervisorPaths } from './records.js';

/** A request line longer than this is not from our driver (a whole environment fits many times). */
const MAX_LINE_BYTES = 16 * 1024 * 1024;

interface Hosted {
  attempt: number;
  dispatch: HostedDispatch;
}

/** Whether a parsed line is a start request (the driver is trusted, but a bug must not crash every unit). */
function isStartRequest(value: unknown): value is StartRequest {
  const request = value as Partial<StartRequest> | null;
  return (
    typeof request === 'object' &&
    request !== null &&
    request.op === 'start' &&
    typeof request.id === 'string' &&
    isValidUnitId(request.id) &&
    Number.isInteger(request.attempt) &&
    Array.isArray(request.argv) &&
    typeof request.envChanges === 'object' &&
    request.envChanges !== null &&
    typeof request.stdout === 'string' &&
    typeof request.stderr === 'string' &&
    Number.isInteger(request.slots) &&
    (request.slots as number) >= 1
  );
}

const STOP_NAME = new RegExp(`^(.+)\\.(\\d+)\\.(${STOP_SIGNALS.join('|')})\\.[0-9a-f]+$`);

/** `<id>.<attempt>.<SIGNAL>.<nonce>`: one stop request for one attempt of one unit (see src/stop.ts). */
function parseStopName(name: string): { id: string; attempt: number; signal: StopSignal } | null {
  const match = STOP_NAME.exec(name);
  return match === null ? null : { id: match[1]!, attempt: Number(match[2]), signal: match[3] as StopSignal };
}

class Supervisor {
  private readonly hosted = new Map<string, Hosted>();
  /**
   * Units handed over while every worker slot was taken, in the order they came. One starts (and
   * is recorded) as soon as a hosted unit's worker exits; until then it has no record, so a driver
   * resuming after this process drained dispatches it again, as one never handed over.
   */
  private readonly waiting: StartRequest[] = [];
  /** Hosted units whose worker has not exited yet: the worker slots taken. */
  private workersBusy = 0;
  /** How many workers may run at once (the latest start request's `slots`). */
  private slots = 1;
  /** `<id>.<attempt>` of every dispatch that ended here: stop requests for them are dropped. */
  private readonly endedHere = new Set<string>();
  private driverGone = false;
  private stopWatcher: FSWatcher | null = null;
  /**
   * Whether `stop/` may hold a request a start has to read: one kept for an attempt not started
   * yet, or one that came before the watcher did (so at first), or any when the watcher failed.
   * A request that comes later wakes the watcher, which reads it once its unit is here: a start
   * lists the folder only when this says so, not for every unit.
   */
  private stopsPending = true;
  /** The watcher of `stop/` has failed: every start reads the folder, as before it had one. */
  private watcherFailed = false;
  private readonly onSignal = (signal: StopSignal): void => this.stopAll(signal);
  /** Resolves once the driver has gone and the last hosted unit has ended and been recorded. */
  private finish: () => void = () => undefined;
  private readonly finished = new Promise<void>((resolve) => {
    this.finish = resolve;
  });
  /**
   * The batch environment its driver started it with, copied out of process.env once: each
   * unit's own is a copy of this plain object with the unit's changes from its start request.
   */
  private readonly batchEnv: NodeJS.ProcessEnv = { ...process.env };
  /**
   * The next unit's isolated chain, parked while the units before it run, so it is ready when
   * the unit comes (the dispatcher's ChainReserve); closed, its spare killed, once the driver
   * has gone and no unit can come.
   */
  private readonly chains = new ChainReserve({ fork: true });

  constructor(
    private readonly batchDir: string,
    private readonly paths: SupervisorPaths,
    private readonly channel: Socket,
  ) {}

  /** Serve until the driver has gone and no unit is left; the bin edge then ends the process. */
  run(): Promise<void> {
    mkdirSync(this.paths.units, { recursive: true });
    mkdirSync(this.paths.stop, { recursive: true });
    // A signal to the supervisor reaches every unit it hosts, as it would each unit's own
    // dispatcher process; its handlers also keep the signal from killing the process (and with
    // it every unit) before the units have stopped and published.
    for (const signal of STOP_SIGNALS) process.on(signal, this.onSignal);
    this.stopWatcher = watch(this.paths.stop, () => this.readStops());
    this.stopWatcher.on('error', () => {
      this.watcherFailed = true;
    });
    this.channel.setEncoding('utf8');
    const onData = lineSplitter(
      (line) => this.onLine(line),
      MAX_LINE_BYTES,
      () => process.stderr.write(`prun supervisor ${process.pid}: dropped an overlong request line\n`),
    );
    this.channel.on('data', onData);
    // The driver has gone (ended, killed, crashed): keep the units, take no more.
    this.channel.on('end', () => this.onDriverGone());
    this.channel.on('close', () => this.onDriverGone());
    // A write to a driver that died is lost; the unit's record carries the outcome.
    this.channel.on('error', () => undefined);
    return this.finished;
  }

  private onLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = null;
    }
    if (!isStartRequest(value)) {
      process.stderr.write(`prun supervisor ${process.pid}: ignored a request that is not a start request\n`);
      return;
    }
    this.slots = value.slots;
    if (this.workersBusy < this.slots) {
      this.start(value);
      return;
    }
    this.waiting.push(value);
    // A stop for it read before it came (kept for an attempt not here yet) ends it now.
    if (this.stopsPending || this.watcherFailed) this.readStops();
  }

  /** A worker slot has come free (a worker exited, or a dispatch ended without one): start who waits. */
  private slotFreed(): void {
    this.workersBusy -= 1;
    // After the other events of this turn of the loop: a stop for the waiting unit whose watcher
    // event came with this worker's exit (a stop of the whole batch reaches the waiting unit
    // first, so its event is always there by then) ends it before it could take the slot.
    if (this.waiting.length > 0) setImmediate(() => this.startWaiting());
  }

  /** Start the waiting units the free slots allow, unless their driver has gone. */
  private startWaiting(): void {
    if (this.waiting.length > 0 && (this.stopsPending || this.watcherFailed)) this.readStops();
    while (this.workersBusy < this.slots && this.waiting.length > 0 && !this.driverGone) this.start(this.waiting.shift()!, true);
  }

  /** Record the unit, then start its dispatch; synchronous up to the start, so `drained` is true when written. */
  private start(request: StartRequest, waited = false): void {
    const { id, attempt } = request;
    if (this.hosted.has(id)) {
      // The driver starts a unit only when it is not running: never two dispatches of one unit.
      process.stderr.write(`prun supervisor ${process.pid}: unit ${id} is already running here; attempt ${attempt} refused\n`);
      this.ended(id, attempt, EXIT_INTERNAL);
      return;
    }
    if (!this.recorded(id, attempt, 'running', null)) {
      // Unrecorded, a resumed driver could not tell it runs: it is not started.
      this.ended(id, attempt, EXIT_INTERNAL);
      return;
    }
    let out: number;
    let err: number;
    try {
      out = openSync(request.stdout, 'a');
      try {
        err = openSync(request.stderr, 'a');
      } catch (error) {
        closeSync(out);
        throw error;
      }
    } catch (error) {
      process.stderr.write(`prun supervisor ${process.pid}: unit ${id}: cannot open its logs: ${(error as Error).message}\n`);
      this.ended(id, attempt, EXIT_INTERNAL);
      return;
    }
    const write = (fd: number) => (text: string) => {
      try {
        writeSync(fd, text);
      } catch {
        // A full disk must not stop the unit; its state directory still has its output.
      }
    };
    const env = withEnvChanges(this.batchEnv, request.envChanges);
    // The slot is the worker's: it frees when agy exits, not when the unit's result is published.
    let holdsSlot = true;
    const freeSlot = (): void => {
      if (!holdsSlot) return;
      holdsSlot = false;
      this.slotFreed();
    };
    this.workersBusy += 1;
    const dispatch = startDispatch(request.argv, { cwd: this.batchDir, env, stdout: write(out), stderr: write(err), chains: this.chains, onWorkerExit: freeSlot });
    this.hosted.set(id, { attempt, dispatch });
    if (waited) this.tell({ id, attempt, started_at: new Date().toISOString() });
    // A stop request that was read before this hand-over applies now.
    if (this.stopsPending || this.watcherFailed) this.readStops();
    void dispatch.done.then((code) => {
      closeSync(out);
      closeSync(err);
      this.hosted.delete(id);
      freeSlot();
      this.ended(id, attempt, code);
    });
  }

  /**
   * A unit's end: recorded, then told. One that never `started` (it waited, and was stopped) is
   * told but not recorded, so should the driver be gone before it reads the notice, the unit
   * reads as never handed over, as nothing of it ran.
   */
  private ended(id: string, attempt: number, code: number, started = true): void {
    this.endedHere.add(`${id}.${attempt}`);
    // Unrecorded, a resumed driver settles the unit from its result alone, as for any dispatch
    // that ended unwatched.
    if (started) this.recorded(id, attempt, 'ended', code);
    this.tell(started ? { id, attempt, exit_code: code } : { id, attempt, exit_code: code, started: false });
    this.maybeExit();
  }

  /** One notice line to the driver; a driver that has gone hears nothing (the records tell). */
  private tell(notice: EndNotice | StartNotice): void {
    if (!this.driverGone) this.channel.write(`${JSON.stringify(notice)}\n`);
  }

  /** Write a unit's record; false (said in the supervisors' log) when it cannot be written. */
  private recorded(id: string, attempt: number, state: 'running' | 'ended', code: number | null): boolean {
    try {
      writeHostedRecord(this.paths.unit(id), { id, attempt, state, exit_code: code });
      return true;
    } catch (error) {
      process.stderr.write(`prun supervisor ${process.pid}: unit ${id}: cannot write its record: ${(error as Error).message}\n`);
      return false;
    }
  }

  private stopAll(signal: StopSignal): void {
    for (const request of this.waiting.splice(0)) this.endWaiting(request, signal);
    for (const hosted of this.hosted.values()) hosted.dispatch.stop(signal);
  }

  /** A waiting unit that is stopped never starts: it ends with the exit code a shell reports for that signal. */
  private endWaiting(request: StartRequest, signal: StopSignal): void {
    this.ended(request.id, request.attempt, signalExitCode(signal), false);
  }

  /**
   * Stop requests for one unit each (prun cancel, --halt now, the driver's signals), consumed as
   * they come. One for an attempt not started here yet stays until it starts: the request may be
   * read before the hand-over that came first on the socket. One for an attempt that has ended
   * here is dropped.
   */
  private readStops(): void {
    let names: string[];
    try {
      names = readdirSync(this.paths.stop);
    } catch {
      return;
    }
    let kept = false;
    for (const name of names) {
      const stop = parseStopName(name);
      const waits = stop === null ? -1 : this.waiting.findIndex((request) => request.id === stop.id && request.attempt === stop.attempt);
      if (waits >= 0) {
        rmSync(join(this.paths.stop, name), { force: true });
        this.endWaiting(this.waiting.splice(waits, 1)[0]!, stop!.signal);
        continue;
      }
      const hosted = stop === null ? undefined : this.hosted.get(stop.id);
      const current = hosted !== undefined && hosted.attempt === stop!.attempt;
      if (stop !== null && !current && !this.endedHere.has(`${stop.id}.${stop.attempt}`)) {
        kept = true;
        continue;
      }
      rmSync(join(this.paths.stop, name), { force: true });
      if (current) hosted.dispatch.stop(stop!.signal);
    }
    this.stopsPending = kept;
  }

  private onDriverGone(): void {
    if (this.driverGone) return;
    this.driverGone = true;
    // Every line the driver wrote before it went has been read, and every unit started here is
    // recorded; those still waiting will never start (nobody would watch them): a driver resuming
    // the batch may now take a unit with no record here as never handed over.
    this.waiting.length = 0;
    try {
      writeFileSync(this.paths.drained, `${new Date().toISOString()}\n`);
    } catch (error) {
      // Without it a resumed driver waits for this process to end before it re-dispatches a
      // unit that was never handed over: slower, never wrong.
      process.stderr.write(`prun supervisor ${process.pid}: cannot write ${this.paths.drained}: ${(error as Error).message}\n`);
    }
    this.channel.destroy();
    this.chains.close();
    this.maybeExit();
  }

  private maybeExit(): void {
    if (!this.driverGone || this.hosted.size > 0) return;
    this.stopWatcher?.close();
    // Every record is written (synchronously); what may still hold the loop (a quota refresh's
    // timer, a drained pipe) has nothing left to tell anyone: the bin edge (main.ts, kit's runBin
    // with exitWhenDone) ends the process, the signal handlers in place until it is gone. The
    // chain forker goes first: it ends with its last chain, which every unit has seen end.
    void this.chains.ended().then(() => this.finish());
  }
}

/** The supervisor's whole life, run by main.ts through kit's runBin (its one catch: one line, exit 70). */
export async function main(): Promise<number> {
  const start = processStartTime(process.pid);
  if (start === null) throw new CliError('cannot read its own start time from /proc', { exitCode: EXIT_INTERNAL });
  const paths = supervisorPaths(process.cwd(), { pid: process.pid, start });
  const channel = new Socket({ fd: 3, readable: true, writable: true });
  await new Supervisor(process.cwd(), paths, channel).run();
  return EXIT_OK;
}

/** Run by kit's runBin: end the process once main has settled (see Supervisor.maybeExit). */
export const exitWhenDone = true;
