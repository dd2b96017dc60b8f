import { Waker, type WatchFunction } from './watch.js';

// With a poll of 0 the originals spun in a busy loop; a floor keeps the CPU free.
const MIN_POLL_MS = 100;

export interface LoopOptions {
  watch?: WatchFunction;
  now?: () => number;
}

/**
 * What monitor and gather share: operands that join over time, one start line printed at the
 * latest when the operand list closes, a pass run on every wake-up, and one end with an exit
 * code (`finished`).
 */
export abstract class WatchLoop {
  readonly finished: Promise<number>;
  protected readonly now: () => number;
  /** The timeout clock starts here, before any operand arrives. */
  protected readonly startMs: number;
  protected readonly waker: Waker;
  protected operandsComplete = false;
  #startPrinted = false;
  #done = false;
  #resolve!: (code: number) => void;
  #onStop: (() => void) | undefined;

  constructor(options: LoopOptions) {
    this.now = options.now ?? Date.now;
    this.startMs = this.now();
    this.finished = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    this.waker = new Waker(() => this.pass(), options.watch ? { watch: options.watch } : {});
  }

  /** Look at everything once; end the watch or sleep until the next deadline. */
  abstract pass(): void;

  protected abstract emitStart(): void;

  protected get done(): boolean {
    return this.#done;
  }

  /** Called once when the watch ends (to stop reading stdin, for example). */
  onStop(callback: () => void): void {
    this.#onStop = callback;
  }

  /** No more operands: print the start line and take the first look. */
  endOperands(): void {
    if (this.#done) return;
    this.operandsComplete = true;
    this.printStart();
    this.pass();
  }

  /** The latest moment of the next look: one poll interval on, never past the timeout. */
  protected nextLookMs(nowMs: number, pollS: number, timeoutS: number): number {
    return Math.min(nowMs + Math.max(MIN_POLL_MS, pollS * 1000), this.startMs + timeoutS * 1000);
  }

  protected printStart(): void {
    if (this.#startPrinted) return;
    this.#startPrinted = true;
    this.emitStart();
  }

  /** End the watch with `code`. */
  stop(code: number): void {
    if (this.#done) return;
    this.#done = true;
    this.waker.close();
    this.#onStop?.();
    this.#resolve(code);
  }
}
