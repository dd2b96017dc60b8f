import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { EXIT, SnapshotError } from './errors.js';
import { boundedTailStream, defaultSourceIo, type CopyResult, type OpenTail, type SourceIo } from './source.js';

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

/**
 * Stream the bounded tail into `out` as a ZIP of exactly `tail.bin` then `manifest.json`, both
 * STORED. The manifest is made (by `manifestFor`) once the last tail byte has been read and
 * hashed. `tail.bin` always carries ZIP64 sizes (as the Python original wrote it), so a member
 * past 4 GiB needs no different layout. `out` is closed when this returns or throws. Returns
 * the manifest written.
 */
export async function writeArchive(
  out: FileHandle,
  tail: OpenTail,
  manifestFor: (copy: CopyResult) => Manifest,
  io: SourceIo = defaultSourceIo,
): Promise<Manifest> {
  const zip = new yazl.ZipFile();
  const { stream, done } = boundedTailStream(tail, io);
  // The sink owns `out` and closes it once everything is flushed (closing a FileHandle still
  // lent to a stream would wait forever).
  const sink = createWriteStream('', { fd: out, autoClose: true, highWaterMark: 1024 * 1024 });
  zip.outputStream.pipe(sink);
  const failure = new Promise<never>((_, reject) => {
    zip.on('error', reject);
    // pipe() does not forward errors; each stream's failure must end the build itself.
    stream.on('error', reject);
    zip.outputStream.on('error', reject);
    sink.on('error', reject);
  });
  failure.catch(() => undefined);
  const mtime = new Date();
  zip.addReadStream(stream, TAIL_MEMBER, { compress: false, forceZip64Format: true, mtime, mode: MEMBER_MODE });
  try {
    const manifest = manifestFor(await Promise.race([done, failure]));
    zip.addBuffer(manifestBytes(manifest), MANIFEST_MEMBER, { compress: false, mtime, mode: MEMBER_MODE });
    zip.end();
    await Promise.race([once(sink, 'close'), failure]);
    return manifest;
  } catch (error) {
    stream.destroy();
    sink.destroy();
    if (!sink.closed) await new Promise<void>((resolveClose) => sink.once('close', () => resolveClose()));
    throw error;
  }
}

// Python's repr() of a list of str, as the upstream message shows member names.
export function pythonListRepr(items: readonly string[]): string {
  const reprOne = (text: string): string => {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let body = '';
    for (const char of text) {
      const code = char.codePointAt(0)!;
      if (char === '\\') body += '\\\\';
      else if (char === quote) body += `\\${quote}`;
      else if (char === '\n') body += '\\n';
      else if (char === '\r') body += '\\r';
      else if (char === '\t') body += '\\t';
      else if (code < 0x20 || code === 0x7f) body += `\\x${code.toString(16).padStart(2, '0')}`;
      else body += char;
    }
    return `${quote}${body}${quote}`;
  };
  return `[${items.map(reprOne).join(', ')}]`;
}

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

async function readMember(zip: yauzl.ZipFile, entry: yauzl.Entry, onChunk: (chunk: Buffer) => void): Promise<void> {
  const stream: Readable = await zip.openReadStreamPromise(entry);
  for await (const chunk of stream) onChunk(chunk as Buffer);
}

function invalid(message: string): SnapshotError {
  return new SnapshotError(EXIT.archive, message);
}

/**
 * Read the archive back with an independent reader before anything is published: exactly the
 * two members, both STORED, the archived manifest equal to `expected`, and `tail.bin` of the
 * expected length and SHA-256 (`expected.bytes_copied`, `expected.sha256`). Every failure is a
 * SnapshotError with exit 5. `tail.bin` is streamed, never held in memory.
 */
export async function validateArchive(path: string, expected: Record<string, unknown>): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  } catch (error) {
    throw invalid(`archive did not validate: ${(error as Error).message}`);
  }
  try {
    const entries: yauzl.Entry[] = [];
    try {
      for await (const entry of zip.eachEntry()) entries.push(entry);
    } catch (error) {
      throw invalid(`archive did not validate: ${(error as Error).message}`);
    }
    const names = entries.map((entry) => entry.fileName).sort();
    if (names.length !== EXPECTED_MEMBERS.length || names.some((name, index) => name !== EXPECTED_MEMBERS[index])) {
      throw invalid(`unexpected archive members: ${pythonListRepr(names)}`);
    }
    for (const entry of entries) {
      if (entry.compressionMethod !== 0) throw invalid(`${entry.fileName} is not stored`);
    }
    const hash = createHash('sha256');
    let tailLength = 0;
    const manifestChunks: Buffer[] = [];
    let manifestLength = 0;
    let archived: unknown;
    try {
      for (const entry of entries) {
        if (entry.fileName === TAIL_MEMBER) {
          await readMember(zip, entry, (chunk) => {
            hash.update(chunk);
            tailLength += chunk.length;
          });
        } else {
          await readMember(zip, entry, (chunk) => {
            manifestLength += chunk.length;
            if (manifestLength > MANIFEST_READ_LIMIT) throw new Error('manifest.json is implausibly large');
            manifestChunks.push(chunk);
          });
        }
      }
      archived = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(manifestChunks)));
    } catch (error) {
      throw invalid(`archive did not validate: ${(error as Error).message}`);
    }
    if (!jsonEqual(archived, expected)) throw invalid('manifest.json disagrees with the manifest written');
    if (tailLength !== expected.bytes_copied) throw invalid('tail.bin length disagrees with manifest');
    if (hash.digest('hex') !== expected.sha256) throw invalid('tail.bin digest disagrees with manifest');
  } finally {
    zip.close();
  }
}
