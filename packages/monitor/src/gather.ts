import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { STATE_FILES, readResultPathEntry } from '@prun/unit-state';
import { reportUnusable, statRegularFile, type FileFacts, type UnusableStateFile } from './observe.js';
import type { GatherSettings } from './settings.js';
import { WatchLoop, type LoopOptions } from './loop.js';

/**
 * When a result file lands: a regular file with at least one byte whose mtime is at least the
 * stable window in the past. Returns `landed`, or the moment it would land if left alone, or
 * null when it is absent or empty (only a file event or a poll can change that).
 */
export function landingOf(file: FileFacts | null, stableWindowS: number, nowMs: number): 'landed' | number | null {
  if (file === null || file.size === 0) return null;
  const landsAtMs = file.mtimeMs + stableWindowS * 1000;
  return nowMs >= landsAtMs ? 'landed' : landsAtMs;
}

/**
 * The path printed on a `DONE` line: the file's directory with symlinks and `..` resolved,
 * then the name as given (a symlinked file name is not followed). An unreadable directory is
 * only made absolute.
 */
export function donePath(path: string, cwd: string): string {
  const dir = resolve(cwd, dirname(path));
  let physical: string;
  try {
    physical = realpathSync(dir);
  } catch {
    physical = dir;
  }
  return join(physical, basename(path));
}

export type GatherRecord =
  | { event: 'start'; count: number; timeoutS: number }
  | { event: 'done'; path: string }
  | { event: 'timeout'; remaining: number };

export interface GatherOptions extends LoopOptions {
  settings: GatherSettings;
  cwd: string;
  emit: (record: GatherRecord) => void;
  /** A STATE-DIR operand's `result-file` that is there but unusable (a FIFO, ...): told once. */
  onUnusable?: (file: UnusableStateFile) => void;
}

interface Awaited {
  /** The result path, or null while a state directory names none yet. */
  path: () => string | null;
  landed: boolean;
}

/**
 * Waits for result files. Operands join with `addFile` / `addStateDir`; `endOperands` prints
 * GATHER-START and starts landing them. The timeout runs from construction, so a producer that
 * never closes stdin still gets its TIMEOUT line.
 */
export class GatherRun extends WatchLoop {
  readonly #options: GatherOptions;
  readonly #files: Awaited[] = [];

  constructor(options: GatherOptions) {
    super(options);
    this.#options = options;
    this.waker.wakeAt(this.startMs + options.settings.timeoutS * 1000, this.startMs);
  }

  addFile(path: string): void {
    // Resolved at each look: a directory created after the start still prints physically.
    this.#files.push({ path: () => donePath(path, this.#options.cwd), landed: false });
  }

  /** A `STATE-DIR` operand: the result its `result-file` names (read again until it names one). */
  addStateDir(stateDir: string): void {
    const absDir = resolve(this.#options.cwd, stateDir);
    let told = false;
    const onUnusable = (file: UnusableStateFile): void => {
      if (told) return;
      told = true;
      this.#options.onUnusable?.(file);
    };
    this.#files.push({
      path: () => {
        const entry = readResultPathEntry(absDir);
        if (entry === null) reportUnusable(join(absDir, STATE_FILES.resultFile), onUnusable);
        return entry === null ? null : donePath(entry, this.#options.cwd);
      },
      landed: false,
    });
  }

  pass(): void {
    if (this.done) return;
    const { settings } = this.#options;
    const nowMs = this.now();
    const timeoutAtMs = this.startMs + settings.timeoutS * 1000;
    // As the original: the timeout is checked before the scan, so a timeout of 0 lands nothing.
    if (nowMs >= timeoutAtMs) {
      this.printStart();
      this.#options.emit({ event: 'timeout', remaining: this.#files.filter((f) => !f.landed).length });
      this.stop(2);
      return;
    }
    let wakeAtMs = this.nextLookMs(nowMs, settings.pollS, settings.timeoutS);
    if (this.operandsComplete) {
      for (const file of this.#files) {
        if (file.landed) continue;
        const path = file.path();
        if (path === null) continue;
        this.waker.watchFile(path);
        const landing = landingOf(statRegularFile(path), settings.stableWindowS, nowMs);
        if (landing === 'landed') {
          file.landed = true;
          this.#options.emit({ event: 'done', path });
        } else if (landing !== null) {
          wakeAtMs = Math.min(wakeAtMs, landing);
        }
      }
      if (this.#files.every((f) => f.landed)) {
        this.stop(0);
        return;
      }
    }
    this.waker.wakeAt(wakeAtMs, this.now());
  }

  protected emitStart(): void {
    this.#options.emit({ event: 'start', count: this.#files.length, timeoutS: this.#options.settings.timeoutS });
  }
}
