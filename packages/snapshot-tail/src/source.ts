import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
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

/** What the bounded read copied. */
export interface CopyResult {
  bytesCopied: number;
  sha256: string;
}

/**
 * A stream of at most `sizeAtOpen` bytes of the tail from offset 0, in chunks of at most 1 MiB,
 * hashed as they pass, so a tail of any size is copied in constant memory. Later appends are
 * never included; an early EOF (a truncated tail) ends the stream short. `done` resolves when
 * the last byte has been read. A read error surfaces as a SnapshotError (exit 4) on the stream.
 */
export function boundedTailStream(
  tail: OpenTail,
  io: SourceIo = defaultSourceIo,
): { stream: Readable; done: Promise<CopyResult> } {
  let settle!: (result: CopyResult) => void;
  let fail!: (error: unknown) => void;
  const done = new Promise<CopyResult>((resolvePromise, rejectPromise) => {
    settle = resolvePromise;
    fail = rejectPromise;
  });
  done.catch(() => undefined);
  async function* chunks(): AsyncGenerator<Buffer> {
    const hash = createHash('sha256');
    let position = 0;
    try {
      while (position < tail.sizeAtOpen) {
        const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, tail.sizeAtOpen - position));
        let bytesRead: number;
        try {
          bytesRead = await io.read(tail.handle, buffer, position);
        } catch (error) {
          throw new SnapshotError(EXIT.source, `cannot read ${tail.path}: ${osErrorText(error)}`);
        }
        if (bytesRead === 0) break;
        const chunk = bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
        hash.update(chunk);
        position += bytesRead;
        yield chunk;
      }
    } catch (error) {
      fail(error);
      throw error;
    }
    settle({ bytesCopied: position, sha256: hash.digest('hex') });
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), done };
}
