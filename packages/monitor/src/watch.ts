import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export type WatchFunction = (dir: string, listener: (event: string, filename: string | null) => void) => FSWatcher;

const defaultWatch: WatchFunction = (dir, listener) =>
  fsWatch(dir, { persistent: false }, (event, filename) => listener(event, filename == null ? null : String(filename)));

// setTimeout fires at once for delays beyond 2^31-1 ms; a later wake-up just looks again.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Wakes a watch loop on file-system events (inotify through fs.watch) and at a deadline. A
 * directory that cannot be watched (ENOENT, ENOTDIR, EACCES) is tried again on the next
 * `watchDir`; when the system runs out of watches (ENOSPC, EMFILE, ENFILE) watching stops for
 * good and the deadline timer alone (bounded by the poll interval) keeps the loop going.
 */
export class Waker {
  readonly #watchers = new Map<string, FSWatcher>();
  /**
   * Per directory: the names wanted, and whether every other name is wanted too (all but
   * `ignoredWhenWhole`).
   */
  readonly #interest = new Map<string, { names: Set<string>; ignoredWhenWhole: ReadonlySet<string> | null }>();
  #watchingDisabled = false;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #soonTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly wake: () => void,
    private readonly options: { coalesceMs?: number; watch?: WatchFunction } = {},
  ) {}

  /** Directories currently watched (for tests and the bench). */
  get watchedDirs(): string[] {
    return [...this.#watchers.keys()];
  }

  get watchingDisabled(): boolean {
    return this.#watchingDisabled;
  }

  #interestIn(dir: string): { names: Set<string>; ignoredWhenWhole: ReadonlySet<string> | null } {
    let interest = this.#interest.get(dir);
    if (interest === undefined) {
      interest = { names: new Set(), ignoredWhenWhole: null };
      this.#interest.set(dir, interest);
    }
    return interest;
  }

  /** Wake on changes to any entry of `dir` except the `ignored` names. */
  watchDir(dir: string, ignored: ReadonlySet<string> = new Set()): void {
    this.#interestIn(dir).ignoredWhenWhole = ignored;
    this.#watch(dir);
  }

  /** Stop waking for `dir` as a whole (names asked for with `watchFile` stay). */
  unwatchDir(dir: string): void {
    const interest = this.#interest.get(dir);
    if (interest === undefined || interest.ignoredWhenWhole === null) return;
    interest.ignoredWhenWhole = null;
    if (interest.names.size > 0) return;
    this.#interest.delete(dir);
    this.#watchers.get(dir)?.close();
    this.#watchers.delete(dir);
  }

  /**
   * Wake on changes to `path`, which need not exist yet (its directory is watched; while that
   * directory is missing, its nearest existing ancestor is watched for the missing name).
   * Returns true when a new watcher was set up: a change made just before it went unseen, so
   * the caller should look again.
   */
  watchFile(path: string): boolean {
    const dir = dirname(path);
    this.#interestIn(dir).names.add(basename(path));
    const outcome = this.#watch(dir);
    if (outcome === 'missing' && dirname(dir) !== dir) return this.watchFile(dir);
    return outcome === 'installed';
  }

  #isRelevant(dir: string, filename: string | null): boolean {
    const interest = this.#interest.get(dir);
    if (interest === undefined) return false;
    if (filename === null || interest.names.has(filename)) return true;
    return interest.ignoredWhenWhole !== null && !interest.ignoredWhenWhole.has(filename);
  }

  #watch(dir: string): 'installed' | 'watching' | 'missing' | 'unavailable' {
    if (this.#watchers.has(dir)) return 'watching';
    if (this.#closed || this.#watchingDisabled) return 'unavailable';
    try {
      const watcher = (this.options.watch ?? defaultWatch)(dir, (_event, filename) => {
        if (this.#isRelevant(dir, filename)) this.soon();
      });
      watcher.on('error', () => {
        watcher.close();
        this.#watchers.delete(dir);
        this.soon();
      });
      this.#watchers.set(dir, watcher);
      return 'installed';
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EMFILE' || code === 'ENFILE') this.#watchingDisabled = true;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unavailable';
    }
  }

  /** Wake shortly; bursts of events within the coalescing delay give one wake-up. */
  soon(): void {
    if (this.#closed || this.#soonTimer) return;
    this.#soonTimer = setTimeout(() => {
      this.#soonTimer = undefined;
      this.wake();
    }, this.options.coalesceMs ?? 25);
  }

  /** Wake at `atMs` (epoch ms), replacing the previous deadline. */
  wakeAt(atMs: number, nowMs: number = Date.now()): void {
    if (this.#closed) return;
    clearTimeout(this.#deadlineTimer);
    // +1 ms: a timer may fire a hair before the clock reaches the deadline it was set for.
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(atMs - nowMs) + 1));
    this.#deadlineTimer = setTimeout(() => {
      this.#deadlineTimer = undefined;
      this.wake();
    }, delay);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#deadlineTimer);
    clearTimeout(this.#soonTimer);
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }
}
