import { constants, readSync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { pyListRepr, pyRepr } from '@prun/kit/py';
import { EXIT, SnapshotError, osErrorText } from './errors.js';
import { createChunkHasher, type ChunkHasher } from './hasher.js';
import { SlotCycle, copyBounded, defaultSourceIo, type CopyResult, type OpenTail, type SourceIo } from './source.js';
import {
  EOCD_SEARCH_BYTES,
  LOCAL_HEADER_BYTES,
  ZipFormatError,
  centralHeader,
  dataOffset,
  endRecords,
  locateDirectory,
  localHeader,
  parseCentralDirectory,
  type CentralEntry,
  type MemberRecord,
} from './zip.js';

export const TAIL_MEMBER = 'tail.bin';
export const MANIFEST_MEMBER = 'manifest.json';
const EXPECTED_MEMBERS = [MANIFEST_MEMBER, TAIL_MEMBER];

export const MANIFEST_NOTE =
  'A bounded best-effort read. Equal byte counts do not prove the source was unchanged during the copy.';

/** The nine manifest fields, in their contractual order. */
export interface Manifest {
  schema_version: 1;
  captured_at: string;
  source_path: string;
  source_size_at_open: number;
  bytes_copied: number;
  sha256: string;
  source_may_be_live: true;
  capture_outcome: 'complete_bounded_read' | 'short_read';
  note: string;
}

/** `YYYY-MM-DDTHH:MM:SSZ` in UTC. */
export function isoSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function buildManifest(input: {
  capturedAt: Date;
  sourcePath: string;
  sizeAtOpen: number;
  copy: CopyResult;
}): Manifest {
  return {
    schema_version: 1,
    captured_at: isoSeconds(input.capturedAt),
    source_path: input.sourcePath,
    source_size_at_open: input.sizeAtOpen,
    bytes_copied: input.copy.bytesCopied,
    sha256: input.copy.sha256,
    source_may_be_live: true,
    capture_outcome: input.copy.bytesCopied === input.sizeAtOpen ? 'complete_bounded_read' : 'short_read',
    note: MANIFEST_NOTE,
  };
}

/** manifest.json as written: 2-space indent, no trailing newline. */
export function manifestBytes(manifest: object): Buffer {
  return Buffer.from(JSON.stringify(manifest, null, 2), 'utf8');
}

// Both members are owner-only files when extracted, like the archive itself.
const MEMBER_MODE = 0o100600;

/** Write all of `data` at `position` (a write may be short; this one is not). */
export async function writeFully(out: FileHandle, data: Buffer, position: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const { bytesWritten } = await out.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}

/**
 * The most one system call writes of the tail. Linux (6.x) backs a buffered write with page-cache
 * folios as large as the write, and finding room for megabyte folios in a busy machine's memory
 * costs the kernel far more than the copy: 1 GiB written 1 MiB at a time took 1.3 s of system time
 * on this project's machines where 256 KiB at a time took 0.33 s, as `cp` does.
 */
export const WRITE_PIECE_BYTES = 256 * 1024;

// The same as direct system calls, for the tail's pieces: a write through libuv's thread pool
// costs two thread wake-ups and a promise per MiB, and the copy loop has nothing to do meanwhile.
function writeFullySync(fd: number, data: Buffer, position: number): void {
  for (let done = 0; done < data.length; ) {
    done += writeSync(fd, data, done, Math.min(WRITE_PIECE_BYTES, data.length - done), position + done);
  }
}

/**
 * Write the bounded tail into `out` as a ZIP of exactly `tail.bin` then `manifest.json`, both
 * STORED, in one pass over the tail (see `copyBounded`): its local header goes first with
 * placeholder CRC and sizes and is rewritten in place once they are known, so no data descriptor
 * is needed. The manifest is made (by `manifestFor`) once the last tail byte has been read and
 * hashed. `tail.bin` always carries ZIP64 sizes (as the Python original wrote it), so a member
 * past 4 GiB needs no different layout. `hasher` defaults to one sized for the tail that takes
 * the CRC-32 too; `out` is closed when this returns or throws. With `readBack`, every piece of
 * `tail.bin` is read back from the archive file right after it is written (see
 * `TrailingReader`), and tail.bin's CRC-32 is that of the bytes read back (one CRC pass, not
 * two; they are proved equal to the copied bytes by SHA-256), so `hasher` need not take one.
 * Returns the manifest written.
 */
export async function writeArchive(
  out: FileHandle,
  tail: OpenTail,
  manifestFor: (copy: CopyResult) => Manifest,
  io: SourceIo = defaultSourceIo,
  hasher?: ChunkHasher,
  readBack?: TrailingReader,
): Promise<Manifest> {
  if (readBack === undefined && hasher?.takesCrc32 === false) {
    await out.close();
    throw new TypeError('writeArchive: without a read-back, the hasher must take the CRC-32 (crc32: true)');
  }
  const ownHasher = hasher ?? createChunkHasher(tail.sizeAtOpen, { crc32: readBack === undefined });
  try {
    const mtime = new Date();
    const tailMember = { name: TAIL_MEMBER, size: 0, crc32: 0, localHeaderOffset: 0, forceZip64: true, mtime, mode: MEMBER_MODE };
    const placeholder = localHeader(tailMember);
    await writeFully(out, placeholder, 0);
    const dataStart = placeholder.length;
    readBack?.begin(dataStart);
    const copy = await copyBounded(tail, io, ownHasher, (chunk, position) => {
      writeFullySync(out.fd, chunk, dataStart + position);
      // Once the write has returned, the file holds these bytes: read them back from it now.
      return readBack?.follow(dataStart + position, chunk.length);
    });
    const crc = readBack === undefined ? copy.crc32! : crcReadBack(await readBack.finish());
    Object.assign(tailMember, { size: copy.bytesCopied, crc32: crc });
    const manifest = manifestFor(copy);
    const body = manifestBytes(manifest);
    const manifestMember: MemberRecord = {
      name: MANIFEST_MEMBER,
      size: body.length,
      crc32: crc32(body),
      localHeaderOffset: placeholder.length + copy.bytesCopied,
      forceZip64: false,
      mtime,
      mode: MEMBER_MODE,
    };
    const manifestHeader = localHeader(manifestMember);
    const central = Buffer.concat([centralHeader(tailMember), centralHeader(manifestMember)]);
    const centralOffset = manifestMember.localHeaderOffset + manifestHeader.length + body.length;
    const end = endRecords({ entries: 2, centralOffset, centralSize: central.length });
    await writeFully(out, localHeader(tailMember), 0);
    await writeFully(out, Buffer.concat([manifestHeader, body, central, end]), manifestMember.localHeaderOffset);
    return manifest;
  } finally {
    if (hasher === undefined) await ownHasher.close();
    await out.close();
  }
}

// Python's repr() of a list of str, as the upstream message shows member names (kit's, re-exported).
export { pyListRepr as pythonListRepr } from '@prun/kit/py';

/** Deep equality of parsed JSON values (key order ignored, as Python's dict equality). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]));
  }
  const aKeys = Object.keys(a);
  const bRecord = b as Record<string, unknown>;
  const aRecord = a as Record<string, unknown>;
  return (
    aKeys.length === Object.keys(b).length &&
    aKeys.every((key) => Object.hasOwn(bRecord, key) && jsonEqual(aRecord[key], bRecord[key]))
  );
}

const MANIFEST_READ_LIMIT = 1024 * 1024;
// A snapshot's central directory is about 150 bytes; a far larger one is not a snapshot.
const DIRECTORY_READ_LIMIT = 1024 * 1024;

function invalid(message: string): SnapshotError {
  return new SnapshotError(message, EXIT.archive);
}

/** Read exactly `length` bytes at `position`, or fail as a truncated archive. */
async function readExactly(handle: FileHandle, target: Buffer, position: number): Promise<Buffer> {
  for (let done = 0; done < target.length; ) {
    const { bytesRead } = await handle.read(target, done, target.length - done, position + done);
    if (bytesRead === 0) throw new ZipFormatError('unexpected end of archive');
    done += bytesRead;
  }
  return target;
}

/** Fill `target` from `fd` at `position` with direct system calls, or fail as a truncated archive. */
function readExactlySync(fd: number, target: Buffer, position: number): void {
  for (let done = 0; done < target.length; ) {
    const bytesRead = readSync(fd, target, done, target.length - done, position + done);
    if (bytesRead === 0) throw new ZipFormatError('unexpected end of archive');
    done += bytesRead;
  }
}

/**
 * What a `TrailingReader` read back of `tail.bin` while the archive was written: `length` bytes
 * from offset `start` of the archive file, their SHA-256 and CRC-32; or the failure that stopped
 * it (reported by the validation where it reads `tail.bin`, as a failed read after close would be).
 */
export type ReadBack = ReadBackRegion | { failure: unknown };

/** The region of the archive file a `TrailingReader` read back in full. */
export interface ReadBackRegion {
  start: number;
  length: number;
  sha256: string;
  crc32: number;
}

/** tail.bin's CRC-32 from the read-back (0 once the read-back has failed: nothing will be published). */
function crcReadBack(readBack: ReadBack): number {
  return 'failure' in readBack ? 0 : readBack.crc32;
}

/**
 * The validation's read of `tail.bin`, moved forward so it overlaps the copy: a second reader
 * that trails the writer through its own read-only descriptor of the temporary archive, reading
 * each piece of the data region back from the file (never from the buffers that were written)
 * as soon as the write has returned, into the slots of its own hasher, which takes their SHA-256
 * and CRC-32 (on its thread, for a large tail, while this thread copies and hashes the copy).
 * `validateArchive` then checks, against the closed file, that `tail.bin`'s data is exactly the
 * region read back. A failure to open or read is kept and reported there, in the contract's order.
 */
export class TrailingReader {
  private start = -1;
  private length = 0;
  private failure: unknown = undefined;
  private readonly cycle: SlotCycle | undefined;
  private finished: Promise<ReadBack> | undefined;

  private constructor(
    private readonly handle: FileHandle | undefined,
    private readonly hasher: ChunkHasher,
    failure: unknown,
  ) {
    this.failure = failure;
    this.cycle = failure === undefined ? new SlotCycle(hasher) : undefined;
  }

  /**
   * Open `path` read-only (never following a symlink) and make sure it is the very file `writer`
   * writes (same device and inode), for reading it back into `hasher`, which must take the
   * CRC-32 too (`createChunkHasher(size, { crc32: true })`).
   */
  static async open(path: string, writer: FileHandle, hasher: ChunkHasher): Promise<TrailingReader> {
    if (!hasher.takesCrc32) throw new TypeError('TrailingReader.open: the hasher must take the CRC-32 (crc32: true)');
    let handle: FileHandle | undefined;
    try {
      handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
      const [mine, written] = await Promise.all([handle.stat(), writer.stat()]);
      if (mine.dev !== written.dev || mine.ino !== written.ino) throw new ZipFormatError(`${path} is not the file being written`);
      return new TrailingReader(handle, hasher, undefined);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      return new TrailingReader(undefined, hasher, error);
    }
  }

  /** The archive offset where `tail.bin`'s data begins: the first byte `follow` will read. */
  begin(start: number): void {
    this.start = start;
    this.length = 0;
  }

  /** Read back the `length` bytes just written at `position` (each call continues the last). */
  async follow(position: number, length: number): Promise<void> {
    if (this.failure !== undefined || this.handle === undefined || this.cycle === undefined || this.finished !== undefined) return;
    if (position !== this.start + this.length) {
      this.failure = new ZipFormatError(`the read-back of ${TAIL_MEMBER} lost its place (at ${this.start + this.length}, asked for ${position})`);
      return;
    }
    for (let done = 0; done < length; ) {
      const slot = await this.cycle.take();
      const piece = slot.subarray(0, Math.min(slot.length, length - done));
      try {
        readExactlySync(this.handle.fd, piece, position + done);
      } catch (error) {
        this.failure = error;
        return;
      }
      this.cycle.push(piece);
      done += piece.length;
      this.length += piece.length;
    }
  }

  /** What was read back, once its last piece is hashed; the same answer however often it is asked (nothing more is read after it). */
  finish(): Promise<ReadBack> {
    this.finished ??= this.settle();
    return this.finished;
  }

  private async settle(): Promise<ReadBack> {
    if (this.failure !== undefined) return { failure: this.failure };
    const digest = await this.hasher.digest();
    return { start: this.start, length: this.length, sha256: digest.sha256, crc32: digest.crc32 ?? 0 };
  }

  async close(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
  }
}

/** SHA-256 and CRC-32 of `length` bytes at `start`, read into the slots of a hasher that takes both, ahead of the hash. */
async function digestRange(handle: FileHandle, start: number, length: number): Promise<{ sha256: string; crc32: number }> {
  const hasher = createChunkHasher(length, { crc32: true });
  try {
    const cycle = new SlotCycle(hasher);
    for (let position = 0; position < length; ) {
      const slot = await cycle.take();
      const chunk = slot.subarray(0, Math.min(slot.length, length - position));
      // Direct system calls, as in the copy (see writeFullySync).
      readExactlySync(handle.fd, chunk, start + position);
      cycle.push(chunk);
      position += chunk.length;
    }
    const digest = await hasher.digest();
    return { sha256: digest.sha256, crc32: digest.crc32 ?? 0 };
  } finally {
    await hasher.close();
  }
}

/** The read-back, provided it covered exactly `tail.bin`'s data in the closed archive; else why not. */
function readBackRegion(readBack: ReadBack, start: number, length: number): ReadBackRegion {
  if ('failure' in readBack) throw readBack.failure;
  if (readBack.start !== start || readBack.length !== length) {
    throw new ZipFormatError(
      `${TAIL_MEMBER} in the closed archive (${length} bytes at offset ${start}) is not what was read back (${readBack.length} bytes at offset ${readBack.start})`,
    );
  }
  return readBack;
}

function checkCrc(entry: CentralEntry, actual: number): void {
  if (actual !== entry.crc32 >>> 0) throw new ZipFormatError(`Bad CRC-32 for file ${pyRepr(entry.name)}`);
}

/**
 * Read the closed archive back from disk before anything is published, with a reader that
 * shares nothing with the writer but the format: exactly the two members, both STORED, each
 * CRC-32 right, the archived manifest equal to `expected`, and `tail.bin` of the expected length
 * and SHA-256 (`expected.bytes_copied`, `expected.sha256`). Every failure is a SnapshotError with
 * exit 5. `tail.bin` is read in large pieces while a hasher sized for it (a worker thread for a
 * large one) takes the SHA-256 and CRC-32 of the previous ones, never held in memory.
 *
 * With `readBack` (what a `TrailingReader` read of this file while it was written), `tail.bin`
 * is not read a second time: its data offset and size in the closed archive must be exactly the
 * region read back (else `archive did not validate: ...`, where a failed read would fail), and
 * the CRC-32, length and SHA-256 checks use what was read back.
 */
export async function validateArchive(path: string, expected: Record<string, unknown>, readBack?: ReadBack): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw invalid(`archive did not validate: ${osErrorText(error)}`);
  }
  try {
    const readAt = (position: number, length: number) => readExactly(handle, Buffer.allocUnsafe(length), position);
    let entries: CentralEntry[];
    let centralOffset: number;
    try {
      const size = (await handle.stat()).size;
      const searched = Math.min(size, EOCD_SEARCH_BYTES);
      const location = await locateDirectory(await readAt(size - searched, searched), size, readAt);
      if (location.centralSize > DIRECTORY_READ_LIMIT) throw new ZipFormatError('the central directory is implausibly large');
      entries = parseCentralDirectory(await readAt(location.centralOffset, location.centralSize), location.entries);
      centralOffset = location.centralOffset;
    } catch (error) {
      throw invalid(`archive did not validate: ${osErrorText(error)}`);
    }
    const names = entries.map((entry) => entry.name).sort();
    if (names.length !== EXPECTED_MEMBERS.length || names.some((name, index) => name !== EXPECTED_MEMBERS[index])) {
      throw invalid(`unexpected archive members: ${pyListRepr(names)}`);
    }
    for (const entry of entries) {
      if (entry.method !== 0) throw invalid(`${entry.name} is not stored`);
    }
    let tailLength = 0;
    let tailDigest = '';
    let archived: unknown;
    try {
      for (const entry of entries) {
        const start = dataOffset(await readAt(entry.localHeaderOffset, LOCAL_HEADER_BYTES), entry);
        if (entry.compressedSize !== entry.uncompressedSize) throw new ZipFormatError(`${entry.name} has disagreeing stored sizes`);
        if (start + entry.compressedSize > centralOffset) throw new ZipFormatError(`${entry.name} runs into the central directory`);
        if (entry.name === TAIL_MEMBER && readBack !== undefined) {
          const region = readBackRegion(readBack, start, entry.compressedSize);
          checkCrc(entry, region.crc32);
          tailLength = region.length;
          tailDigest = region.sha256;
        } else if (entry.name === TAIL_MEMBER) {
          const digest = await digestRange(handle, start, entry.compressedSize);
          checkCrc(entry, digest.crc32);
          tailLength = entry.compressedSize;
          tailDigest = digest.sha256;
        } else {
          if (entry.compressedSize > MANIFEST_READ_LIMIT) throw new ZipFormatError('manifest.json is implausibly large');
          const body = await readAt(start, entry.compressedSize);
          checkCrc(entry, crc32(body));
          archived = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
        }
      }
    } catch (error) {
      throw invalid(`archive did not validate: ${osErrorText(error)}`);
    }
    if (!jsonEqual(archived, expected)) throw invalid('manifest.json disagrees with the manifest written');
    if (tailLength !== expected.bytes_copied) throw invalid('tail.bin length disagrees with manifest');
    if (tailDigest !== expected.sha256) throw invalid('tail.bin digest disagrees with manifest');
  } finally {
    await handle.close();
  }
}
