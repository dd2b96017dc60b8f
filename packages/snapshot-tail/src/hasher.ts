import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { crc32 } from 'node:zlib';

/**
 * SHA-256 (and, when asked for, CRC-32) over a sequence of chunks that live in a fixed set of
 * reusable buffers (`slots`). `push` hands a chunk over and returns a ticket at once; the chunk's
 * memory may be refilled once its ticket is done (`waitSync`, `wait`). `update` is `push` and
 * `wait` in one. `digest` returns the digest of everything pushed since the last digest and
 * starts afresh.
 *
 * For a large stream the hashing runs on a worker thread reading the slots in place (they are
 * views of one SharedArrayBuffer), so SHA-256 on one core overlaps the reads and writes on the
 * other: SHA-256 is the most expensive step of a snapshot and cannot be split. The two threads
 * hand chunks over through shared counters (Atomics), not messages, so a chunk costs no
 * event-loop turn on either side.
 */
export interface ChunkHasher {
  /** The reusable buffers chunks live in. */
  readonly slots: readonly Buffer[];
  /** Whether `digest` gives the CRC-32 too (`createChunkHasher`'s `crc32` option). */
  readonly takesCrc32: boolean;
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
  /** The digest of everything pushed since the last digest; starts afresh. */
  digest(): Promise<ChunkDigest>;
  close(): Promise<void>;
}

/** What a hasher took of its chunks: SHA-256 (hex), and CRC-32 when it was made to take one (else null). */
export interface ChunkDigest {
  sha256: string;
  crc32: number | null;
}

/**
 * Each slot holds one read of the tail (at most 1 MiB). On a thread, two let the caller fill one
 * while the thread hashes the other: the snapshot's read-back, the thread's stream, hands it a
 * piece once per copied piece, and the copy between two pieces (a read, its SHA-256, a write, the
 * read back) takes longer than the thread's SHA-256 and CRC-32 of one, so more slots would only
 * add peak memory (a worker thread itself costs about 9 MiB).
 */
export const SLOT_BYTES = 1024 * 1024;
const THREAD_SLOT_COUNT = 2;
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
 * which measures as fast as aligned. `slotBytes` is a whole number of pages whenever `count` > 1.
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
  private crc = 0;
  private pushed = 0;

  constructor(
    slotBytes: number,
    readonly takesCrc32: boolean,
  ) {
    // Hashed before push returns, a slot is free again at once: one is enough.
    ({ slots: this.slots } = pageAlignedSlots((bytes) => new ArrayBuffer(bytes), slotBytes, 1));
  }

  // Hashed before push returns: every ticket is done at once.
  push(chunk: Buffer): number {
    this.hash.update(chunk);
    if (this.takesCrc32) this.crc = crc32(chunk, this.crc);
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

  digest(): Promise<ChunkDigest> {
    const digest = { sha256: this.hash.digest('hex'), crc32: this.takesCrc32 ? this.crc >>> 0 : null };
    this.hash = createHash('sha256');
    this.crc = 0;
    return Promise.resolve(digest);
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
const RING_ENTRY = 2;
const DIGEST_REQUEST = -1;

// The worker: wait until a request is posted, add that range of the shared memory to the hash
// (and the CRC-32, when asked to take one), or post the digest back and start afresh; count it
// finished, wake a waiting caller; repeat until told to stop. It never returns to its event
// loop, so a chunk costs it no message.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { crc32 } = require('node:zlib');
const memory = Buffer.from(workerData.memory);
const control = new Int32Array(workerData.control);
const { ring, takesCrc32 } = workerData;
(function serve() {
  let hash = createHash('sha256');
  let crc = 0;
  for (let request = 0; ; request += 1) {
    while (Atomics.load(control, ${POSTED}) === request) {
      if (Atomics.load(control, ${STOP}) !== 0) return;
      Atomics.wait(control, ${POSTED}, request);
    }
    const at = ${RING_AT} + ${RING_ENTRY} * (request % ring);
    const offset = control[at];
    const length = control[at + 1];
    if (length === ${DIGEST_REQUEST}) {
      parentPort.postMessage({ sha256: hash.digest('hex'), crc32: takesCrc32 ? crc >>> 0 : null });
      hash = createHash('sha256');
      crc = 0;
    } else {
      const chunk = memory.subarray(offset, offset + length);
      hash.update(chunk);
      if (takesCrc32) crc = crc32(chunk, crc);
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
  private readonly digests: { resolve(digest: ChunkDigest): void; reject(error: unknown): void }[] = [];
  private failure: unknown = null;

  constructor(readonly takesCrc32: boolean) {
    ({ memory: this.memory, slots: this.slots } = pageAlignedSlots((bytes) => new SharedArrayBuffer(bytes), SLOT_BYTES, THREAD_SLOT_COUNT));
    // Room for every slot in flight plus digest requests; a caller always waits for a slot's
    // ticket before refilling it, so the ring never laps an unfinished request.
    this.ring = 4 * THREAD_SLOT_COUNT + 4;
    this.control = new Int32Array(new SharedArrayBuffer(4 * (RING_AT + RING_ENTRY * this.ring)));
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { memory: this.memory, control: this.control.buffer, ring: this.ring, takesCrc32 },
      stdout: false,
      stderr: false,
      // The worker only hashes: a small heap keeps its memory small (Node's own start-up in
      // a worker needs about 5 MiB of old generation).
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    this.worker.on('message', (digest: ChunkDigest) => this.digests.shift()?.resolve(digest));
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
    const at = RING_AT + RING_ENTRY * (ticket % this.ring);
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

  digest(): Promise<ChunkDigest> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.post(0, DIGEST_REQUEST);
      this.digests.push({ resolve, reject });
    });
  }

  async close(): Promise<void> {
    this.failure ??= new Error('the hasher is closed');
    Atomics.store(this.control, STOP, 1);
    Atomics.notify(this.control, POSTED);
    await this.worker.terminate();
  }
}

export interface ChunkHasherOptions {
  /** Take the CRC-32 of the chunks too, where the SHA-256 is taken (default false). */
  crc32?: boolean;
  /**
   * Hash on a worker thread (default: when `expectedBytes` reaches THREAD_THRESHOLD_BYTES).
   * `false` hashes on the caller's thread as each chunk is pushed: the snapshot's copy does,
   * as the thread is busy with the read-back (see `snapshotTail`).
   */
  thread?: boolean;
}

/**
 * A hasher for a stream of about `expectedBytes`: on a worker thread when that is large enough to
 * pay off (or as `options.thread` says), else inline with one slot sized for it.
 */
export function createChunkHasher(expectedBytes: number, options: ChunkHasherOptions = {}): ChunkHasher {
  const takesCrc32 = options.crc32 ?? false;
  if (options.thread ?? expectedBytes >= THREAD_THRESHOLD_BYTES) return new ThreadHasher(takesCrc32);
  return new InlineHasher(Math.max(1, Math.min(SLOT_BYTES, expectedBytes)), takesCrc32);
}
