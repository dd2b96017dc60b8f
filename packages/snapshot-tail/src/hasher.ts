import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * SHA-256 over a sequence of chunks that live in a fixed set of reusable buffers (`slots`).
 * `push` hands a chunk over and returns a ticket at once; the chunk's memory may be refilled once
 * its ticket is done (`waitSync`, `wait`). `update` is `push` and `wait` in one. `digest` returns
 * the hex digest of everything pushed since the last digest and starts a new hash.
 *
 * For a large stream the hashing runs on a worker thread reading the slots in place (they are
 * views of one SharedArrayBuffer), so SHA-256 on one core overlaps reading, CRC-32 and writing
 * on the other: SHA-256 is the most expensive step of a snapshot and cannot be split. The two
 * threads hand chunks over through shared counters (Atomics), not messages, so a chunk costs
 * no event-loop turn on either side.
 */
export interface ChunkHasher {
  readonly slots: readonly Buffer[];
  /** Queue `chunk` (a view of one of `slots`) after everything pushed before; returns its ticket. */
  push(chunk: Buffer): number;
  /**
   * Block the calling thread for at most `timeoutMs` until the chunk of `ticket` is hashed;
   * true once it is. Nothing else runs meanwhile, so callers keep the timeout short and fall
   * back to `wait`, which lets events (a failed hashing thread, signals) through.
   */
  waitSync(ticket: number, timeoutMs: number): boolean;
  /** Resolves once the chunk of `ticket` is hashed; rejects if hashing failed. */
  wait(ticket: number): Promise<void>;
  update(chunk: Buffer): Promise<void>;
  digest(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Each slot holds one read of the tail (at most 1 MiB); four of them keep the reader and the
 * writer ahead of the hash while memory stays a few MiB (a worker thread itself costs about 9).
 */
export const SLOT_BYTES = 1024 * 1024;
const SLOT_COUNT = 4;
/** Below this many bytes a worker thread (about 30 ms and 10 MiB to start) does not pay off. */
export const THREAD_THRESHOLD_BYTES = 32 * 1024 * 1024;

const PAGE_BYTES = 4096;
// Where a large allocation starts past a page boundary: glibc serves it from mmap behind a
// 16-byte chunk header, so a fresh buffer begins 16 bytes into a page.
const ALLOCATION_HEADER_BYTES = 16;

/**
 * `count` slots of `slotBytes` in one block of `memory` (an ArrayBuffer or SharedArrayBuffer made
 * by `make`), each starting on a page boundary. The kernel copies page-cache pages into a read
 * buffer, or out of a write buffer, about three times slower when that buffer starts 16 bytes into
 * a page, where a plain allocation starts (measured on this project's x86-64 machines: 1 GiB in
 * 1 MiB reads, 0.50 s of system time against 0.15 s page-aligned; writes alike). The block's own
 * address is not visible to JavaScript, so the slots start one page less the allocation header in;
 * should an allocator return page-aligned blocks instead, they start 16 bytes before a boundary,
 * which measures as fast as aligned.
 */
export function pageAlignedSlots<T extends ArrayBufferLike>(make: (bytes: number) => T, slotBytes: number, count: number): { memory: T; slots: Buffer[] } {
  const lead = PAGE_BYTES - ALLOCATION_HEADER_BYTES;
  const memory = make(lead + slotBytes * count);
  const slots = Array.from({ length: count }, (_, index) => Buffer.from(memory, lead + index * slotBytes, slotBytes));
  return { memory, slots };
}

class InlineHasher implements ChunkHasher {
  readonly slots: readonly Buffer[];
  private hash: Hash = createHash('sha256');
  private pushed = 0;

  constructor(slotBytes: number, count: number) {
    this.slots = pageAlignedSlots((bytes) => new ArrayBuffer(bytes), slotBytes, count).slots;
  }

  // Hashed before push returns: every ticket is done at once.
  push(chunk: Buffer): number {
    this.hash.update(chunk);
    return this.pushed++;
  }

  waitSync(): boolean {
    return true;
  }

  wait(): Promise<void> {
    return Promise.resolve();
  }

  update(chunk: Buffer): Promise<void> {
    this.push(chunk);
    return Promise.resolve();
  }

  digest(): Promise<string> {
    const hex = this.hash.digest('hex');
    this.hash = createHash('sha256');
    return Promise.resolve(hex);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

// The shared control block: two counters the threads hand chunks over with, a stop flag, and a
// ring of [byteOffset, length] entries, one per pushed request (length -1 asks for the digest).
const POSTED = 0; // requests pushed so far (written by the caller's thread)
const HASHED = 1; // requests finished so far (written by the worker)
const STOP = 2;
const RING_AT = 4;
const DIGEST_REQUEST = -1;

// The worker: wait until a request is posted, hash that range of the shared memory (or post the
// hex digest back and start a new hash), count it finished, wake a waiting caller; repeat until
// told to stop. It never returns to its event loop, so a chunk costs it no message.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const memory = Buffer.from(workerData.memory);
const control = new Int32Array(workerData.control);
const ring = workerData.ring;
(function serve() {
  let hash = createHash('sha256');
  for (let request = 0; ; request += 1) {
    while (Atomics.load(control, ${POSTED}) === request) {
      if (Atomics.load(control, ${STOP}) !== 0) return;
      Atomics.wait(control, ${POSTED}, request);
    }
    const at = ${RING_AT} + 2 * (request % ring);
    const offset = control[at];
    const length = control[at + 1];
    if (length === ${DIGEST_REQUEST}) {
      parentPort.postMessage(hash.digest('hex'));
      hash = createHash('sha256');
    } else {
      hash.update(memory.subarray(offset, offset + length));
    }
    Atomics.store(control, ${HASHED}, request + 1);
    Atomics.notify(control, ${HASHED});
  }
})();
`;

// How long `wait` blocks at a time before it lets the event loop run (and sees a failed worker).
const WAIT_SLICE_MS = 5;

class ThreadHasher implements ChunkHasher {
  readonly slots: readonly Buffer[];
  private readonly memory: SharedArrayBuffer;
  private readonly control: Int32Array;
  private readonly ring: number;
  private readonly worker: Worker;
  private pushed = 0;
  // Digests come back as messages, in the order they were asked for.
  private readonly digests: { resolve(hex: string): void; reject(error: unknown): void }[] = [];
  private failure: unknown = null;

  constructor(slotBytes: number, count: number) {
    ({ memory: this.memory, slots: this.slots } = pageAlignedSlots((bytes) => new SharedArrayBuffer(bytes), slotBytes, count));
    // Room for every slot in flight plus digest requests; a caller always waits for a slot's
    // ticket before refilling it, so the ring never laps an unfinished request.
    this.ring = 4 * count + 4;
    this.control = new Int32Array(new SharedArrayBuffer(4 * (RING_AT + 2 * this.ring)));
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { memory: this.memory, control: this.control.buffer, ring: this.ring },
      stdout: false,
      stderr: false,
      // The worker only hashes: a small heap keeps its memory small (Node's own start-up in
      // a worker needs about 5 MiB of old generation).
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    this.worker.on('message', (hex: unknown) => this.digests.shift()?.resolve(String(hex)));
    this.worker.on('error', (error) => this.fail(new Error(`the hashing thread failed: ${error.message}`)));
    this.worker.on('exit', (code) => this.fail(new Error(`the hashing thread stopped (exit ${code})`)));
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    for (const waiter of this.digests.splice(0)) waiter.reject(this.failure);
  }

  private post(offset: number, length: number): number {
    if (this.failure !== null) throw this.failure;
    const ticket = this.pushed;
    if (ticket - Atomics.load(this.control, HASHED) >= this.ring) throw new Error('ThreadHasher: too many requests in flight');
    const at = RING_AT + 2 * (ticket % this.ring);
    this.control[at] = offset;
    this.control[at + 1] = length;
    this.pushed = ticket + 1;
    Atomics.store(this.control, POSTED, this.pushed);
    Atomics.notify(this.control, POSTED);
    return ticket;
  }

  push(chunk: Buffer): number {
    if (chunk.buffer !== this.memory) throw new TypeError('ThreadHasher.push: the chunk must be one of its slots');
    return this.post(chunk.byteOffset, chunk.length);
  }

  waitSync(ticket: number, timeoutMs: number): boolean {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const hashed = Atomics.load(this.control, HASHED);
      if (hashed > ticket) return true;
      const left = deadline - performance.now();
      if (left <= 0 || this.failure !== null) return false;
      Atomics.wait(this.control, HASHED, hashed, left);
    }
  }

  async wait(ticket: number): Promise<void> {
    for (;;) {
      if (this.waitSync(ticket, WAIT_SLICE_MS)) return;
      if (this.failure !== null) throw this.failure;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  update(chunk: Buffer): Promise<void> {
    try {
      return this.wait(this.push(chunk));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  digest(): Promise<string> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.digests.push({ resolve, reject });
      this.post(0, DIGEST_REQUEST);
    });
  }

  async close(): Promise<void> {
    this.failure ??= new Error('the hasher is closed');
    Atomics.store(this.control, STOP, 1);
    Atomics.notify(this.control, POSTED);
    await this.worker.terminate();
  }
}

/** A hasher for a stream of about `expectedBytes`: threaded when that is large enough to pay off. */
export function createChunkHasher(expectedBytes: number): ChunkHasher {
  if (expectedBytes < THREAD_THRESHOLD_BYTES) {
    const slotBytes = Math.max(1, Math.min(SLOT_BYTES, expectedBytes));
    return new InlineHasher(slotBytes, expectedBytes <= slotBytes ? 1 : 2);
  }
  return new ThreadHasher(SLOT_BYTES, SLOT_COUNT);
}
