import { spawnSync } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe as baseDescribe, expect } from 'vitest';
import yazl from 'yazl';
import {
  EXIT,
  SnapshotError,
  THREAD_THRESHOLD_BYTES,
  TrailingReader,
  buildManifest,
  createChunkHasher,
  manifestBytes,
  openTail,
  writeArchive,
  type Manifest,
  snapshotTail,
  validateArchive,
  type SourceIo,
} from '../src/index.js';
import { centralHeader, endRecords, locateDirectory, parseCentralDirectory } from '../src/zip.js';
import { defaultSourceIo } from '../src/source.js';
import { HAVE_UNZIP, it, makeUnit, readArchive, sha256 } from './helpers.js';

const describe = baseDescribe.concurrent;

describe('ZIP records', () => {
  it('writes and reads back ZIP64 end records and offsets past 4 GiB', async () => {
    const member = {
      name: 'manifest.json',
      size: 441,
      crc32: 0xdeadbeef,
      localHeaderOffset: 5 * 2 ** 30,
      forceZip64: false,
      mtime: new Date(2026, 0, 2, 3, 4, 6),
      mode: 0o100600,
    };
    const central = centralHeader(member);
    const centralOffset = 5 * 2 ** 30 + 500;
    const end = endRecords({ entries: 1, centralOffset, centralSize: central.length });
    // The file as the reader sees it: the directory, then the end records, at those offsets.
    const fileSize = centralOffset + central.length + end.length;
    const image = Buffer.concat([central, end]);
    const readAt = async (position: number, length: number) => image.subarray(position - centralOffset, position - centralOffset + length);
    const location = await locateDirectory(end, fileSize, readAt);
    expect(location).toMatchObject({ entries: 1, centralOffset, centralSize: central.length });
    const [entry] = parseCentralDirectory(central, 1);
    expect(entry).toEqual({
      name: 'manifest.json',
      flags: 0,
      method: 0,
      crc32: 0xdeadbeef,
      compressedSize: 441,
      uncompressedSize: 441,
      localHeaderOffset: 5 * 2 ** 30,
    });
  });

  it('keeps a small archive free of ZIP64 end records', () => {
    expect(endRecords({ entries: 2, centralOffset: 1000, centralSize: 150 })).toHaveLength(22);
  });
});

async function zipOf(path: string, add: (zip: yazl.ZipFile) => void): Promise<void> {
  const zip = new yazl.ZipFile();
  add(zip);
  zip.end();
  await once(zip.outputStream.pipe(createWriteStream(path)), 'close');
}

describe('validating what other writers produce', () => {
  const data = Buffer.from('tail bytes, streamed');
  const expected = { bytes_copied: data.length, sha256: sha256(data) };

  it('accepts stored members written with data descriptors', async ({ root }) => {
    const path = join(root, 'dd.zip');
    await zipOf(path, (zip) => {
      zip.addReadStream(Readable.from([data]), 'tail.bin', { compress: false });
      zip.addBuffer(manifestBytes(expected), 'manifest.json', { compress: false });
    });
    await expect(validateArchive(path, expected)).resolves.toBeUndefined();
  });

  it('refuses a tail.bin whose bytes no longer match its CRC-32, as Python zipfile does', async ({ root }) => {
    const path = join(root, 'crc.zip');
    await zipOf(path, (zip) => {
      zip.addBuffer(data, 'tail.bin', { compress: false });
      zip.addBuffer(manifestBytes(expected), 'manifest.json', { compress: false });
    });
    const bytes = readFileSync(path);
    const at = bytes.indexOf(data);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(path, bytes);
    const flipped = Buffer.from(data);
    flipped[0] = flipped[0]! ^ 0xff;
    const given = { bytes_copied: data.length, sha256: sha256(flipped) };
    await expect(validateArchive(path, given)).rejects.toThrow(
      new SnapshotError("archive did not validate: Bad CRC-32 for file 'tail.bin'", EXIT.archive),
    );
  });

  it('refuses a truncated archive', async ({ root }) => {
    const path = join(root, 'cut.zip');
    await zipOf(path, (zip) => {
      zip.addBuffer(data, 'tail.bin', { compress: false });
      zip.addBuffer(manifestBytes(expected), 'manifest.json', { compress: false });
    });
    writeFileSync(path, readFileSync(path).subarray(0, 60));
    await expect(validateArchive(path, expected)).rejects.toThrow('archive did not validate: ');
  });
});

describe('one pass over a large tail', () => {
  it('copies a tail past the thread threshold in reads of at most 1 MiB, verified by yauzl and unzip', async ({ root }) => {
    const size = THREAD_THRESHOLD_BYTES + 3 * 1024 * 1024 + 17;
    const payload = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i += 4096) payload.writeUInt32BE(i / 4096, i);
    payload.fill(7, size - 17);
    const unit = makeUnit(root, 'large', payload);
    let reads = 0;
    let largest = 0;
    const source: SourceIo = {
      ...defaultSourceIo,
      read: (handle, buffer, position) => {
        reads += 1;
        largest = Math.max(largest, buffer.length);
        return defaultSourceIo.read(handle, buffer, position);
      },
    };
    const output = join(root, 'd', 'large.zip');
    const outcome = await snapshotTail({ unit, output, env: {}, cwd: root }, { source });
    expect(outcome.manifest).toMatchObject({ bytes_copied: size, source_size_at_open: size, sha256: sha256(payload) });
    // One pass: every byte read once (reads of 1 MiB, the last one short).
    expect(largest).toBe(1024 * 1024);
    expect(reads).toBe(Math.ceil(size / (1024 * 1024)));
    const back = await readArchive(output);
    expect(back.names).toEqual(['tail.bin', 'manifest.json']);
    expect(back.members.get('tail.bin')!.equals(payload)).toBe(true);
    if (HAVE_UNZIP) expect(spawnSync('unzip', ['-tq', output], { encoding: 'utf8' }).status).toBe(0);
  });

  it('hashes on a thread exactly what it would hash inline', async () => {
    const threaded = createChunkHasher(THREAD_THRESHOLD_BYTES);
    const inline = createChunkHasher(1024);
    try {
      const chunks = [Buffer.from('first chunk '), Buffer.alloc(700_000, 3), Buffer.from('last')];
      for (const chunk of chunks) {
        const slot = threaded.slots[0]!;
        chunk.copy(slot);
        await threaded.update(slot.subarray(0, chunk.length));
      }
      for (const chunk of chunks) await inline.update(chunk);
      const expected = sha256(Buffer.concat(chunks));
      expect((await threaded.digest()).sha256).toBe(expected);
      expect((await inline.digest()).sha256).toBe(expected);
      // A digest starts the next hash afresh.
      expect((await threaded.digest()).sha256).toBe(sha256(''));
    } finally {
      await threaded.close();
      await inline.close();
    }
  });
});

describe('where a CRC-32 comes from', () => {
  it('refuses, before a byte is written, a hasher that takes none where the archive needs its CRC from it', async ({ root }) => {
    const unit = makeUnit(root, 'nocrc', 'some tail bytes');
    const tail = await openTail(join(unit, 'tail'));
    const path = join(root, 'out.zip');
    const out = await open(path, 'w');
    const hasher = createChunkHasher(100);
    try {
      await expect(writeArchive(out, tail, () => ({}) as Manifest, defaultSourceIo, hasher)).rejects.toThrow(TypeError);
      expect(readFileSync(path)).toHaveLength(0);
      // The writer's handle was closed (as on every other way out of writeArchive).
      await expect(out.stat()).rejects.toThrow();
      await expect(TrailingReader.open(path, out, hasher)).rejects.toThrow('the hasher must take the CRC-32');
    } finally {
      await tail.handle.close();
      await hasher.close();
    }
  });

  it('writes, without a read-back, the CRC-32 its own hasher took on the thread', async ({ root }) => {
    const payload = Buffer.alloc(THREAD_THRESHOLD_BYTES + 3, 7);
    const unit = makeUnit(root, 'thread-crc', payload);
    const tail = await openTail(join(unit, 'tail'));
    const path = join(root, 'out.zip');
    try {
      const manifest = await writeArchive(await open(path, 'w'), tail, (copy) =>
        buildManifest({ capturedAt: new Date(), sourcePath: tail.path, sizeAtOpen: tail.sizeAtOpen, copy }),
      );
      await validateArchive(path, manifest as unknown as Record<string, unknown>);
      const back = await readArchive(path);
      expect(back.members.get('tail.bin')!.equals(payload)).toBe(true);
      if (HAVE_UNZIP) expect(spawnSync('unzip', ['-tq', path], { encoding: 'utf8' }).status).toBe(0);
    } finally {
      await tail.handle.close();
    }
  });
});
