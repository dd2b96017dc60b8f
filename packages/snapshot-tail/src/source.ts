import { constants, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { ChunkHasher } from './hasher.js';
import { EXIT, SnapshotError, osErrorText } from './errors.js';

/** The largest single read from the tail. */
export const READ_CHUNK_BYTES = 1024 * 1024;

/** The file-system calls on the source, replaceable in tests to inject faults. */
export interface SourceIo {
  stat(path: string): Promise<Stats>;
  open(path: string): Promise<FileHandle>;
  fstat(handle: FileHandle): Promise<Stats>;
  read(handle: FileHandle, buffer: Buffer, position: number): Promise<number>;
}

export const defaultSourceIo: SourceIo = {
  stat: (path) => stat(path),
  // Non-blocking so a FIFO or a device that slipped past the stat never hangs the open.
  open: (path) => open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY),
  fstat: (handle) => handle.stat(),
  read: async (handle, buffer, position) => (await handle.read(buffer, 0, buffer.length, position)).bytesRead,
};

/** An open tail and the size it had at open: the most that will ever be read from it. */
export interface OpenTail {
  path: string;
  handle: FileHandle;
  sizeAtOpen: number;
}

function notRegular(path: string): SnapshotError {
  return new SnapshotError(EXIT.source, `${path} is not a regular file; refusing to snapshot it`);
}

function cannotOpen(path: string, error: unknown): SnapshotError {
  return new SnapshotError(EXIT.source, `cannot open ${path}: ${osErrorText(error)}`);
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

/** What the bounded read copied: its length, SHA-256 (hex) and CRC-32. */
export interface CopyResult {
  bytesCopied: number;
  sha256: string;
  crc32: number;
}

/** One reusable buffer of a pipeline and the work still reading it (hash, write). */
export interface PipelineSlot {
  buffer: Buffer;
  busy: Promise<unknown>;
}

export function pipelineSlots(buffers: readonly Buffer[]): PipelineSlot[] {
  return buffers.map((buffer) => ({ buffer, busy: Promise.resolve() }));
}

/** Mark `work` handled now (it is awaited later), so an early failure is not an unhandled rejection. */
export function keep(work: Promise<unknown>): Promise<unknown> {
  work.catch(() => undefined);
  return work;
}

/** Wait until no slot is in use any more, whatever the outcome (before its file is closed). */
export async function drain(slots: readonly PipelineSlot[]): Promise<void> {
  await Promise.allSettled(slots.map((slot) => slot.busy));
}

/**
 * One pass over at most `sizeAtOpen` bytes of the tail from offset 0, in reads of at most 1 MiB
 * into the hasher's reusable slots. Each filled slot goes to the hasher (a worker thread for a
 * large tail) and to `sink` (the archive writer) at once, and its CRC-32 is taken natively while
 * both run, so reading ahead, hashing and writing overlap and memory stays the few slots whatever
 * the tail's size. Later appends are never included; an early EOF (a truncated tail) ends the copy
 * short. A read error is a SnapshotError (exit 4); a sink error propagates as it is. Returns once
 * every byte has been hashed and written.
 */
export async function copyBounded(
  tail: OpenTail,
  io: SourceIo,
  hasher: ChunkHasher,
  sink: (chunk: Buffer, position: number) => Promise<unknown>,
): Promise<CopyResult> {
  const slots = pipelineSlots(hasher.slots);
  let position = 0;
  let crc = 0;
  let next = 0;
  try {
    for (let eof = false; !eof && position < tail.sizeAtOpen; ) {
      const slot = slots[next]!;
      next = (next + 1) % slots.length;
      await slot.busy;
      const room = Math.min(slot.buffer.length, tail.sizeAtOpen - position);
      let filled = 0;
      while (filled < room) {
        const want = Math.min(READ_CHUNK_BYTES, room - filled);
        let bytesRead: number;
        try {
          bytesRead = await io.read(tail.handle, slot.buffer.subarray(filled, filled + want), position + filled);
        } catch (error) {
          throw new SnapshotError(EXIT.source, `cannot read ${tail.path}: ${osErrorText(error)}`);
        }
        if (bytesRead === 0) {
          eof = true;
          break;
        }
        filled += bytesRead;
      }
      if (filled === 0) break;
      const chunk = slot.buffer.subarray(0, filled);
      const hashed = hasher.update(chunk);
      crc = crc32(chunk, crc);
      slot.busy = keep(Promise.all([hashed, sink(chunk, position)]));
      position += filled;
    }
    for (const slot of slots) await slot.busy;
  } catch (error) {
    await drain(slots);
    throw error;
  }
  return { bytesCopied: position, sha256: await hasher.digest(), crc32: crc >>> 0 };
}
