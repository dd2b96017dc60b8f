import { resolve } from 'node:path';
import {
  classifyUnit,
  decideEvent,
  eventExitCode,
  initialMemory,
  unitName,
  type MonitorEvent,
  type UnitMemory,
  type UnitStatus,
} from './classify.js';
import { NOISY_STATE_FILES, observeUnit, probeDispatch } from './observe.js';
import type { MonitorSettings } from './settings.js';
import { Waker, type WatchFunction } from './watch.js';

export interface UnitReport {
  /** The operand as given. */
  stateDir: string;
  /** `basename` of the operand, as printed on the `UNIT` line. */
  name: string;
  status: UnitStatus;
  /** The absolute result path the unit names, if it names one. */
  resultPath: string | null;
}

export type MonitorRecord =
  | { event: 'start'; units: number; stallThresholdS: number; timeoutS: number }
  | { event: MonitorEvent; units: UnitReport[] };

export interface MonitorOptions {
  settings: MonitorSettings;
  /** Relative result entries and operands resolve against this (the original used its cwd). */
  cwd: string;
  emit: (record: MonitorRecord) => void;
  /** Called after every pass with the current statuses (a live view). */
  onPass?: (units: readonly UnitReport[]) => void;
  watch?: WatchFunction;
  now?: () => number;
}

interface WatchedUnit {
  stateDir: string;
  absDir: string;
  memory: UnitMemory;
  report: UnitReport;
}

// With PRUN_MONITOR_POLL=0 the original spun in a busy loop; a floor keeps the CPU free.
const MIN_POLL_MS = 100;

/**
 * One watch over a growing set of state directories. Units join with `addUnit`; `endOperands`
 * closes the set and prints MONITOR-START. The watch ends on the first actionable event;
 * `finished` resolves with the exit code.
 */
export class MonitorRun {
  readonly finished: Promise<number>;
  readonly #options: MonitorOptions;
  readonly #now: () => number;
  readonly #startMs: number;
  readonly #units: WatchedUnit[] = [];
  readonly #waker: Waker;
  #operandsComplete = false;
  #startPrinted = false;
  #done = false;
  #resolve!: (code: number) => void;
  #onStop: (() => void) | undefined;

  constructor(options: MonitorOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#startMs = this.#now();
    this.finished = new Promise((resolvePromise) => {
      this.#resolve = resolvePromise;
    });
    this.#waker = new Waker(
      () => this.pass(),
      options.watch ? { watch: options.watch } : {},
    );
  }

  /** Called once when the watch ends (to stop reading stdin, for example). */
  onStop(callback: () => void): void {
    this.#onStop = callback;
  }

  addUnit(stateDir: string): void {
    if (this.#done) return;
    const absDir = resolve(this.#options.cwd, stateDir);
    this.#units.push({
      stateDir,
      absDir,
      memory: initialMemory(this.#now()),
      report: { stateDir, name: unitName(stateDir), status: { kind: 'growing' }, resultPath: null },
    });
    this.#waker.watchDir(absDir, NOISY_STATE_FILES);
    this.#waker.soon();
  }

  endOperands(): void {
    if (this.#done) return;
    this.#operandsComplete = true;
    this.#printStart();
    this.pass();
  }

  /** Look at every unit once, end the watch on an event, or sleep until the next deadline. */
  pass(): void {
    if (this.#done) return;
    const { settings } = this.#options;
    const nowMs = this.#now();
    let wakeAtMs = nowMs + Math.max(MIN_POLL_MS, settings.pollS * 1000);
    wakeAtMs = Math.min(wakeAtMs, this.#startMs + settings.timeoutS * 1000);
    for (const unit of this.#units) {
      this.#waker.watchDir(unit.absDir, NOISY_STATE_FILES);
      const observation = observeUnit(unit.absDir, this.#options.cwd);
      if (observation.resultPath !== null) this.#waker.watchFile(observation.resultPath);
      const outcome = classifyUnit(unit.memory, observation, () => probeDispatch(unit.absDir), settings, nowMs);
      unit.memory = outcome.memory;
      unit.report = { ...unit.report, status: outcome.status, resultPath: observation.resultPath };
      if (outcome.wakeAtMs !== null) wakeAtMs = Math.min(wakeAtMs, outcome.wakeAtMs);
    }
    const reports = this.#units.map((unit) => unit.report);
    this.#options.onPass?.(reports);
    const event = decideEvent(
      reports.map((report) => report.status),
      { nowMs: this.#now(), startMs: this.#startMs, timeoutS: settings.timeoutS, operandsComplete: this.#operandsComplete },
    );
    if (event !== null) {
      this.#finish(event, reports);
      return;
    }
    this.#waker.wakeAt(wakeAtMs, this.#now());
  }

  /** End the watch without an event (the caller is going away). */
  stop(code: number): void {
    if (this.#done) return;
    this.#done = true;
    this.#waker.close();
    this.#onStop?.();
    this.#resolve(code);
  }

  #finish(event: MonitorEvent, units: UnitReport[]): void {
    this.#printStart();
    this.#options.emit({ event, units });
    this.stop(eventExitCode(event));
  }

  #printStart(): void {
    if (this.#startPrinted) return;
    this.#startPrinted = true;
    const { settings } = this.#options;
    this.#options.emit({
      event: 'start',
      units: this.#units.length,
      stallThresholdS: settings.stallThresholdS,
      timeoutS: settings.timeoutS,
    });
  }
}
