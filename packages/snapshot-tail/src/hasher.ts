import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * SHA-256 over a sequence of chunks that live in a fixed set of reusable buffers (`slots`).
 * `update` hands a chunk over and resolves once its memory may be refilled; `digest` returns the
 * hex digest of everything updated since the last digest and starts a new hash.
 *
 * For a large stream the hashing runs on a worker thread reading the slots in place (they are
 * views of one SharedArrayBuffer), so SHA-256 on one core overlaps reading, CRC-32 and writing
 * on the other: SHA-256 is the most expensive step of a snapshot and cannot be split.
 */
export interface ChunkHasher {
  readonly slots: readonly Buffer[];
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

  constructor(slotBytes: number, count: number) {
    this.slots = pageAlignedSlots((bytes) => new ArrayBuffer(bytes), slotBytes, count).slots;
  }

  update(chunk: Buffer): Promise<void> {
    this.hash.update(chunk);
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

// The worker: messages are [byteOffset, length] into the shared buffer (hash that range, then
// acknowledge with the same pair), or null (reply with the hex digest and start a new hash).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const memory = Buffer.from(workerData);
let hash = createHash('sha256');
parentPort.on('message', (message) => {
  if (message === null) {
    parentPort.postMessage(hash.digest('hex'));
    hash = createHash('sha256');
    return;
  }
  hash.update(memory.subarray(message[0], message[0] + message[1]));
  parentPort.postMessage(message);
});
`;

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

class ThreadHasher implements ChunkHasher {
  readonly slots: readonly Buffer[];
  private readonly memory: SharedArrayBuffer;
  private readonly worker: Worker;
  // Replies come back in the order requests were posted.
  private readonly pending: Pending[] = [];
  private failure: unknown = null;

  constructor(slotBytes: number, count: number) {
    ({ memory: this.memory, slots: this.slots } = pageAlignedSlots((bytes) => new SharedArrayBuffer(bytes), slotBytes, count));
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: this.memory,
      stdout: false,
      stderr: false,
      // The worker only hashes: a small heap keeps its memory small (Node's own start-up in
      // a worker needs about 5 MiB of old generation).
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    this.worker.on('message', (value: unknown) => this.pending.shift()?.resolve(value));
    this.worker.on('error', (error) => this.fail(new Error(`the hashing thread failed: ${error.message}`)));
    this.worker.on('exit', (code) => this.fail(new Error(`the hashing thread stopped (exit ${code})`)));
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    for (const waiter of this.pending.splice(0)) waiter.reject(this.failure);
  }

  private request(message: [number, number] | null): Promise<unknown> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.worker.postMessage(message);
    });
  }

  update(chunk: Buffer): Promise<void> {
    if (chunk.buffer !== this.memory) throw new TypeError('ThreadHasher.update: the chunk must be one of its slots');
    return this.request([chunk.byteOffset, chunk.length]).then(() => undefined);
  }

  async digest(): Promise<string> {
    return String(await this.request(null));
  }

  async close(): Promise<void> {
    this.failure ??= new Error('the hasher is closed');
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
