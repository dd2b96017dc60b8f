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
  /** The slots of stream 0 (`slotsOf(0)`). */
  readonly slots: readonly Buffer[];
  /** How many independent hashes this hasher keeps (each with its own slots). */
  readonly streams: number;
  /** The reusable slots of `stream`: chunks of that stream live in them. */
  slotsOf(stream: number): readonly Buffer[];
  /**
   * Queue `chunk` (a view of one of this hasher's slots) for the hash of `stream` (default 0),
   * after everything pushed before to any stream; returns its ticket.
   */
  push(chunk: Buffer, stream?: number): number;
  /**
   * Block the calling thread for at most `timeoutMs` until the chunk of `ticket` is hashed;
   * true once it is. Nothing else runs meanwhile, so callers keep the timeout short and fall
   * back to `wait`, which lets events (a failed hashing thread, signals) through.
   */
  waitSync(ticket: number, timeoutMs: number): boolean;
  /** Resolves once the chunk of `ticket` is hashed; rejects if hashing failed. */
  wait(ticket: number): Promise<void>;
  update(chunk: Buffer, stream?: number): Promise<void>;
  /** The hex digest of everything pushed to `stream` (default 0) since its last digest; starts it afresh. */
  digest(stream?: number): Promise<string>;
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
  const { memory, byStream } = slotsForStreams(make, [{ slotBytes, count }]);
  return { memory, slots: byStream[0]! };
}

/** How many slots of how many bytes a stream of a hasher gets. */
interface StreamLayout {
  slotBytes: number;
  count: number;
}

/** One block holding every stream's slots side by side, each on a page boundary (see pageAlignedSlots) when the slots before it are whole pages. */
function slotsForStreams<T extends ArrayBufferLike>(make: (bytes: number) => T, layouts: readonly StreamLayout[]): { memory: T; byStream: Buffer[][] } {
  const lead = PAGE_BYTES - ALLOCATION_HEADER_BYTES;
  const memory = make(lead + layouts.reduce((sum, layout) => sum + layout.slotBytes * layout.count, 0));
  let offset = lead;
  const byStream = layouts.map((layout) =>
    Array.from({ length: layout.count }, () => {
      const slot = Buffer.from(memory, offset, layout.slotBytes);
      offset += layout.slotBytes;
      return slot;
    }),
  );
  return { memory, byStream };
}

function checkStream(stream: number, streams: number): void {
  if (!Number.isInteger(stream) || stream < 0 || stream >= streams) throw new RangeError(`no hash stream ${stream} (this hasher has ${streams})`);
}

class InlineHasher implements ChunkHasher {
  readonly slots: readonly Buffer[];
  private readonly byStream: Buffer[][];
  private readonly hashes: Hash[];
  private pushed = 0;

  readonly streams: number;

  constructor(layouts: readonly StreamLayout[]) {
    this.streams = layouts.length;
    ({ byStream: this.byStream } = slotsForStreams((bytes) => new ArrayBuffer(bytes), layouts));
    this.slots = this.byStream[0]!;
    this.hashes = this.byStream.map(() => createHash('sha256'));
  }

  slotsOf(stream: number): readonly Buffer[] {
    checkStream(stream, this.streams);
    return this.byStream[stream]!;
  }

  // Hashed before push returns: every ticket is done at once.
  push(chunk: Buffer, stream = 0): number {
    checkStream(stream, this.streams);
    this.hashes[stream]!.update(chunk);
    return this.pushed++;
  }

  waitSync(): boolean {
    return true;
  }

  wait(): Promise<void> {
    return Promise.resolve();
  }

  update(chunk: Buffer, stream = 0): Promise<void> {
    try {
      this.push(chunk, stream);
    } catch (error) {
      return Promise.reject(error);
    }
    return Promise.resolve();
  }

  digest(stream = 0): Promise<string> {
    try {
      checkStream(stream, this.streams);
    } catch (error) {
      return Promise.reject(error);
    }
    const hex = this.hashes[stream]!.digest('hex');
    this.hashes[stream] = createHash('sha256');
    return Promise.resolve(hex);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

// The shared control block: two counters the threads hand chunks over with, a stop flag, and a
// ring of [byteOffset, length, stream] entries, one per pushed request (length -1 asks for that
// stream's digest).
const POSTED = 0; // requests pushed so far (written by the caller's thread)
const HASHED = 1; // requests finished so far (written by the worker)
const STOP = 2;
const RING_AT = 4;
const RING_ENTRY = 3;
const DIGEST_REQUEST = -1;

// The worker: wait until a request is posted, add that range of the shared memory to its
// stream's hash (or post the stream's hex digest back and start it afresh), count it finished,
// wake a waiting caller; repeat until told to stop. It never returns to its event loop, so a
// chunk costs it no message.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const memory = Buffer.from(workerData.memory);
const control = new Int32Array(workerData.control);
const ring = workerData.ring;
(function serve() {
  const hashes = Array.from({ length: workerData.streams }, () => createHash('sha256'));
  for (let request = 0; ; request += 1) {
    while (Atomics.load(control, ${POSTED}) === request) {
      if (Atomics.load(control, ${STOP}) !== 0) return;
      Atomics.wait(control, ${POSTED}, request);
    }
    const at = ${RING_AT} + ${RING_ENTRY} * (request % ring);
    const offset = control[at];
    const length = control[at + 1];
    const stream = control[at + 2];
    if (length === ${DIGEST_REQUEST}) {
      parentPort.postMessage(hashes[stream].digest('hex'));
      hashes[stream] = createHash('sha256');
    } else {
      hashes[stream].update(memory.subarray(offset, offset + length));
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
  private readonly byStream: Buffer[][];
  private readonly memory: SharedArrayBuffer;
  private readonly control: Int32Array;
  private readonly ring: number;
  private readonly worker: Worker;
  private pushed = 0;
  // Digests come back as messages, in the order they were asked for.
  private readonly digests: { resolve(hex: string): void; reject(error: unknown): void }[] = [];
  private failure: unknown = null;

  readonly streams: number;

  constructor(layouts: readonly StreamLayout[]) {
    this.streams = layouts.length;
    ({ memory: this.memory, byStream: this.byStream } = slotsForStreams((bytes) => new SharedArrayBuffer(bytes), layouts));
    this.slots = this.byStream[0]!;
    // Room for every slot in flight plus digest requests; a caller always waits for a slot's
    // ticket before refilling it, so the ring never laps an unfinished request.
    this.ring = 4 * layouts.reduce((sum, layout) => sum + layout.count, 0) + 4;
    this.control = new Int32Array(new SharedArrayBuffer(4 * (RING_AT + RING_ENTRY * this.ring)));
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { memory: this.memory, control: this.control.buffer, ring: this.ring, streams: this.streams },
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

  slotsOf(stream: number): readonly Buffer[] {
    checkStream(stream, this.streams);
    return this.byStream[stream]!;
  }

  private post(offset: number, length: number, stream: number): number {
    if (this.failure !== null) throw this.failure;
    checkStream(stream, this.streams);
    const ticket = this.pushed;
    if (ticket - Atomics.load(this.control, HASHED) >= this.ring) throw new Error('ThreadHasher: too many requests in flight');
    const at = RING_AT + RING_ENTRY * (ticket % this.ring);
    this.control[at] = offset;
    this.control[at + 1] = length;
    this.control[at + 2] = stream;
    this.pushed = ticket + 1;
    Atomics.store(this.control, POSTED, this.pushed);
    Atomics.notify(this.control, POSTED);
    return ticket;
  }

  push(chunk: Buffer, stream = 0): number {
    if (chunk.buffer !== this.memory) throw new TypeError('ThreadHasher.push: the chunk must be one of its slots');
    return this.post(chunk.byteOffset, chunk.length, stream);
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

  update(chunk: Buffer, stream = 0): Promise<void> {
    try {
      return this.wait(this.push(chunk, stream));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  digest(stream = 0): Promise<string> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.post(0, DIGEST_REQUEST, stream);
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

/**
 * Slots of a stream after the first: it trails the first (the snapshot's read-back of what the
 * copy just wrote), each of its pieces queued behind the first stream's piece of the same bytes.
 * The hash takes requests in order, so the copy can run ahead of the hash by no more than the
 * trailing stream's slots hold: two half-size slots, and then two slots for the first stream
 * (more would only cost peak memory: 3 MiB in all, one less than a single stream's four).
 */
export const TRAILING_SLOT_BYTES = 512 * 1024;
const TRAILING_SLOT_COUNT = 2;
const LEADING_SLOT_COUNT = 2;

/**
 * A hasher for `streams` (default 1) streams of about `expectedBytes` each: threaded when that is
 * large enough to pay off. One thread serves every stream: a second thread would cost about
 * 9 MiB more, and the snapshot's two SHA-256 passes together keep pace with the copy, which has
 * the other core.
 */
export function createChunkHasher(expectedBytes: number, streams = 1): ChunkHasher {
  if (!Number.isInteger(streams) || streams < 1) throw new RangeError(`a hasher needs at least one stream, not ${streams}`);
  if (expectedBytes < THREAD_THRESHOLD_BYTES) {
    // Hashed inline, a piece is done once pushed: one trailing slot is enough.
    const slotBytes = Math.max(1, Math.min(SLOT_BYTES, expectedBytes));
    const first = { slotBytes, count: expectedBytes <= slotBytes ? 1 : 2 };
    const trailing = { slotBytes: Math.max(1, Math.min(TRAILING_SLOT_BYTES, expectedBytes)), count: 1 };
    return new InlineHasher([first, ...Array.from({ length: streams - 1 }, () => trailing)]);
  }
  const trailing = { slotBytes: TRAILING_SLOT_BYTES, count: TRAILING_SLOT_COUNT };
  const first = { slotBytes: SLOT_BYTES, count: streams === 1 ? SLOT_COUNT : LEADING_SLOT_COUNT };
  return new ThreadHasher([first, ...Array.from({ length: streams - 1 }, () => trailing)]);
}
