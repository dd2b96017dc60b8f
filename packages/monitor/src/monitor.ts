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
import { NOISY_STATE_FILES, observeUnit, probeDispatch, type UnusableStateFile } from './observe.js';
import type { MonitorSettings } from './settings.js';
import { WatchLoop, type LoopOptions } from './loop.js';

export interface UnitReport {
  /** The operand as given. */
  stateDir: string;
  /** `basename` of the operand, as printed on the `UNIT` line. */
  name: string;
  status: UnitStatus;
  /** The absolute result path the unit names, if it names one. */
  resultPath: string | null;
  /** When the unit joined the watch (ms epoch): its stall clock started then. */
  joinedAtMs: number;
  /** The tail's size at the last look; null when there is no tail. */
  tailBytes: number | null;
}

export type MonitorRecord =
  | { event: 'start'; units: number; stallThresholdS: number; timeoutS: number }
  | { event: MonitorEvent; units: UnitReport[] };

export interface MonitorOptions extends LoopOptions {
  settings: MonitorSettings;
  /** Relative result entries and operands resolve against this (the original used its cwd). */
  cwd: string;
  emit: (record: MonitorRecord) => void;
  /** Called after every pass with the current statuses (a live view). */
  onPass?: (units: readonly UnitReport[]) => void;
  /**
   * A state file that is there but cannot be used (a FIFO, a device, over 64 KiB): told once
   * per file and problem. The unit goes on as if the file were absent.
   */
  onUnusable?: (file: UnusableStateFile) => void;
}

interface WatchedUnit {
  stateDir: string;
  absDir: string;
  memory: UnitMemory;
  report: UnitReport;
}

/**
 * One watch over a growing set of state directories. Units join with `addUnit`; `endOperands`
 * closes the set and prints MONITOR-START. The watch ends on the first actionable event;
 * `finished` resolves with the exit code.
 */
export class MonitorRun extends WatchLoop {
  readonly #options: MonitorOptions;
  readonly #units: WatchedUnit[] = [];
  readonly #told = new Set<string>();
  readonly #onUnusable = (file: UnusableStateFile): void => {
    const key = `${file.problem}\0${file.path}`;
    if (this.#told.has(key)) return;
    this.#told.add(key);
    this.#options.onUnusable?.(file);
  };

  constructor(options: MonitorOptions) {
    super(options);
    this.#options = options;
    // The timeout runs from the start, even while stdin has not yet given a single operand.
    this.waker.wakeAt(this.startMs + options.settings.timeoutS * 1000, this.startMs);
  }

  addUnit(stateDir: string): void {
    if (this.done) return;
    const absDir = resolve(this.#options.cwd, stateDir);
    const joinedAtMs = this.now();
    this.#units.push({
      stateDir,
      absDir,
      memory: initialMemory(joinedAtMs),
      report: { stateDir, name: unitName(stateDir), status: { kind: 'growing' }, resultPath: null, joinedAtMs, tailBytes: null },
    });
    this.waker.watchDir(absDir, NOISY_STATE_FILES);
    this.waker.soon();
  }

  pass(): void {
    if (this.done) return;
    const { settings } = this.#options;
    const nowMs = this.now();
    let wakeAtMs = this.nextLookMs(nowMs, settings.pollS, settings.timeoutS);
    let newWatch = false;
    for (const unit of this.#units) {
      const observation = observeUnit(unit.absDir, this.#options.cwd, this.#onUnusable);
      // The state dir matters only until its result-file names the result: after that, its
      // tail writes would be the only events there, and growth is looked at on the deadline.
      if (observation.resultPath === null) this.waker.watchDir(unit.absDir, NOISY_STATE_FILES);
      else {
        this.waker.unwatchDir(unit.absDir);
        // The result was looked at before its watch existed: look once more, so a result
        // landing in between is not left to the poll.
        if (this.waker.watchFile(observation.resultPath)) newWatch = true;
      }
      const outcome = classifyUnit(unit.memory, observation, () => probeDispatch(unit.absDir, this.#onUnusable), settings, nowMs);
      unit.memory = outcome.memory;
      unit.report = { ...unit.report, status: outcome.status, resultPath: observation.resultPath, tailBytes: observation.tail?.size ?? null };
      if (outcome.wakeAtMs !== null) wakeAtMs = Math.min(wakeAtMs, outcome.wakeAtMs);
    }
    const reports = this.#units.map((unit) => unit.report);
    this.#options.onPass?.(reports);
    const event = decideEvent(
      reports.map((report) => report.status),
      { nowMs: this.now(), startMs: this.startMs, timeoutS: settings.timeoutS, operandsComplete: this.operandsComplete },
    );
    if (event !== null) {
      this.printStart();
      this.#options.emit({ event, units: reports });
      this.stop(eventExitCode(event));
      return;
    }
    if (newWatch) this.waker.soon();
    this.waker.wakeAt(wakeAtMs, this.now());
  }

  /** Every unit as of the last look (for a live view between looks). */
  get reports(): readonly UnitReport[] {
    return this.#units.map((unit) => unit.report);
  }

  /** The absolute state directory of each unit, in operand order. */
  get stateDirs(): readonly string[] {
    return this.#units.map((unit) => unit.absDir);
  }

  protected emitStart(): void {
    const { settings } = this.#options;
    this.#options.emit({
      event: 'start',
      units: this.#units.length,
      stallThresholdS: settings.stallThresholdS,
      timeoutS: settings.timeoutS,
    });
  }
}
