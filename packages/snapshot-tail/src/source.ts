import { constants, readSync, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import type { ChunkHasher } from './hasher.js';
import { EXIT, SnapshotError, osErrorText } from './errors.js';

/** The largest single read from the tail. */
export const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * The file-system calls on the source, replaceable in tests to inject faults. `read` fills
 * `buffer` from `position` and answers how many bytes it read (0 at end of file), at once or
 * as a promise.
 */
export interface SourceIo {
  stat(path: string): Promise<Stats>;
  open(path: string): Promise<FileHandle>;
  fstat(handle: FileHandle): Promise<Stats>;
  read(handle: FileHandle, buffer: Buffer, position: number): number | Promise<number>;
}

export const defaultSourceIo: SourceIo = {
  stat: (path) => stat(path),
  // Non-blocking so a FIFO or a device that slipped past the stat never hangs the open.
  open: (path) => open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY),
  fstat: (handle) => handle.stat(),
  // A direct system call: the tail is a regular file (checked at open), and a read handed to
  // libuv's thread pool instead costs two thread wake-ups and a promise per MiB.
  read: (handle, buffer, position) => readSync(handle.fd, buffer, 0, buffer.length, position),
};

/** An open tail and the size it had at open: the most that will ever be read from it. */
export interface OpenTail {
  path: string;
  handle: FileHandle;
  sizeAtOpen: number;
}

function notRegular(path: string): SnapshotError {
  return new SnapshotError(`${path} is not a regular file; refusing to snapshot it`, EXIT.source);
}

function cannotOpen(path: string, error: unknown): SnapshotError {
  return new SnapshotError(`cannot open ${path}: ${osErrorText(error)}`, EXIT.source);
}

/**
 * Open the tail for a bounded read. It must be a regular file (symlinks followed) both before
 * and after the open, so a FIFO, a device or a swap after the stat is refused, never read or
 * waited on. The descriptor is closed on every refusal.
 */
export async function openTail(path: string, io: SourceIo = defaultSourceIo): Promise<OpenTail> {
  let before: Stats;
  try {
    before = await io.stat(path);
  } catch (error) {
    throw cannotOpen(path, error);
  }
  if (!before.isFile()) throw notRegular(path);
  let handle: FileHandle;
  try {
    handle = await io.open(path);
  } catch (error) {
    throw cannotOpen(path, error);
  }
  try {
    const after = await io.fstat(handle);
    if (!after.isFile()) throw notRegular(path);
    return { path, handle, sizeAtOpen: after.size };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error instanceof SnapshotError ? error : cannotOpen(path, error);
  }
}

/** What the bounded read copied: its length, SHA-256 (hex), and CRC-32 where its hasher took one (else null). */
export interface CopyResult {
  bytesCopied: number;
  sha256: string;
  crc32: number | null;
}

// A loop over the slots blocks at most this long at a time waiting for the hash, then lets the
// event loop run (where a failed hashing thread is noticed).
const STALL_MS = 20;
// Pieces handled between two turns of the event loop (8 MiB, a few milliseconds), so a signal
// during a long copy is handled promptly: the loop itself makes only direct system calls.
const PIECES_PER_TURN = 8;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The hasher's reusable slots in turn, for a loop that fills one, pushes it to the hash and
 * moves on. `take` gives the next slot once the hash has finished with what it last held;
 * `push` hashes a filled piece of it. Memory stays those few slots whatever the stream's length.
 */
export class SlotCycle {
  private readonly slots: readonly Buffer[];
  private readonly tickets: number[];
  private current = 0;
  private taken = 0;

  constructor(private readonly hasher: ChunkHasher) {
    this.slots = hasher.slots;
    this.tickets = this.slots.map(() => -1);
  }

  async take(): Promise<Buffer> {
    this.taken += 1;
    if (this.taken % PIECES_PER_TURN === 0) await nextTurn();
    const ticket = this.tickets[this.current]!;
    if (ticket >= 0 && !this.hasher.waitSync(ticket, STALL_MS)) await this.hasher.wait(ticket);
    return this.slots[this.current]!;
  }

  /** Hash `chunk`, a view of the slot `take` gave last, and move on to the next slot. */
  push(chunk: Buffer): void {
    this.tickets[this.current] = this.hasher.push(chunk);
    this.current = (this.current + 1) % this.tickets.length;
  }
}

/**
 * One pass over at most `sizeAtOpen` bytes of the tail from offset 0, in reads of at most 1 MiB
 * into the hasher's reusable slots. Each filled slot goes to the hasher (a worker thread for a
 * large tail) and, while it hashes there, is handed to `sink` (the archive writer) here, so
 * reading, hashing and writing overlap and memory stays the few slots whatever the tail's size.
 * Later appends are never included; an early EOF (a truncated tail) ends the copy short. A read
 * error is a SnapshotError (exit 4); a sink error propagates as it is. Returns once every byte has
 * been hashed and written, with the hasher's digest: its CRC-32 where it takes one (made with
 * `crc32: true`), else null (the snapshot takes tail.bin's from its read-back of the archive).
 */
export async function copyBounded(
  tail: OpenTail,
  io: SourceIo,
  hasher: ChunkHasher,
  sink: (chunk: Buffer, position: number) => void | Promise<unknown>,
): Promise<CopyResult> {
  const cycle = new SlotCycle(hasher);
  let position = 0;
  for (let eof = false; !eof && position < tail.sizeAtOpen; ) {
    const buffer = await cycle.take();
    const room = Math.min(buffer.length, tail.sizeAtOpen - position);
    let filled = 0;
    while (filled < room) {
      const want = Math.min(READ_CHUNK_BYTES, room - filled);
      let bytesRead: number;
      try {
        const answer = io.read(tail.handle, buffer.subarray(filled, filled + want), position + filled);
        bytesRead = typeof answer === 'number' ? answer : await answer;
      } catch (error) {
        throw new SnapshotError(`cannot read ${tail.path}: ${osErrorText(error)}`, EXIT.source);
      }
      if (bytesRead === 0) {
        eof = true;
        break;
      }
      filled += bytesRead;
    }
    if (filled === 0) break;
    const chunk = buffer.subarray(0, filled);
    cycle.push(chunk);
    const written = sink(chunk, position);
    if (written instanceof Promise) await written;
    position += filled;
  }
  const digest = await hasher.digest();
  return { bytesCopied: position, sha256: digest.sha256, crc32: digest.crc32 };
}
