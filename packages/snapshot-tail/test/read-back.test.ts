// The validation's read of tail.bin overlaps the copy: a second reader reads every piece back from
// the temporary archive file right after it is written (see TrailingReader). These tests check that
// it really reads the file, covers exactly the bytes copied whatever the tail's size or growth, and
// that the closed archive is re-checked against the region it read.
//
// The only fault point is this file's wrapper of node:fs (vi.mock, so it exists only in this test
// run, never in the built package): it lets a write into the temporary archive reach the file with
// one byte flipped while the buffer that was written (and hashed) stays intact, as a failing disk or
// a writer bug at the wrong offset would, and it counts the bytes read from the temporary archive.
import { appendFileSync, existsSync, readdirSync, readlinkSync, truncateSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, vi } from 'vitest';
import {
  EXIT,
  SLOT_BYTES,
  SnapshotError,
  THREAD_THRESHOLD_BYTES,
  defaultSeams,
  defaultSourceIo,
  manifestBytes,
  snapshotTail,
  validateArchive,
  type ReadBack,
  type ReadBackRegion,
  type SnapshotSeams,
  type SourceIo,
} from '../src/index.js';
import { HAVE_UNZIP, it, makeUnit, readArchive, sha256, tailPath, tempLeftovers } from './helpers.js';

const fault = vi.hoisted(() => ({
  /** Temporary archives are `.snap-part.*` files in this directory ('' = no fault, no counting). */
  destDir: '',
  /** Flip byte 100 of the piece written by this call of writeSync into the archive (1-based; 0 = none). */
  corruptWrite: 0,
  writes: 0,
  /** Bytes read from the temporary archive with readSync (the read-back). */
  readBack: 0,
}));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const isTempArchive = (fd: number): boolean => {
    if (fault.destDir === '') return false;
    try {
      return real.readlinkSync(`/proc/self/fd/${fd}`).startsWith(join(fault.destDir, '.snap-part.'));
    } catch {
      return false;
    }
  };
  const writeSync = ((fd: number, buffer: Buffer, offset: number, length: number, position: number) => {
    if (isTempArchive(fd)) {
      fault.writes += 1;
      if (fault.writes === fault.corruptWrite) {
        const altered = Buffer.from(buffer.subarray(offset, offset + length));
        altered[100] = altered[100]! ^ 0x01;
        return real.writeSync(fd, altered, 0, length, position);
      }
    }
    return real.writeSync(fd, buffer, offset, length, position);
  }) as typeof real.writeSync;
  const readSync = ((fd: number, buffer: Buffer, offset: number, length: number, position: number) => {
    const bytesRead = real.readSync(fd, buffer, offset, length, position);
    if (isTempArchive(fd)) fault.readBack += bytesRead;
    return bytesRead;
  }) as typeof real.readSync;
  return { ...real, default: { ...real, writeSync, readSync }, writeSync, readSync };
});

// Where the fault point looks up what a descriptor is.
const HAVE_PROC_FD = (() => {
  try {
    readlinkSync('/proc/self/fd/0');
    return true;
  } catch {
    return false;
  }
})();

afterEach(() => {
  Object.assign(fault, { destDir: '', corruptWrite: 0, writes: 0, readBack: 0 });
});

function patterned(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let at = 0; at + 4 <= size; at += 4096) bytes.writeUInt32BE(at / 4096, at);
  return bytes;
}

/** The real source, which runs `change` (on the tail) once its first read has returned. */
function afterFirstRead(change: () => void): { source: SourceIo; happened: () => boolean } {
  let done = false;
  const source: SourceIo = {
    ...defaultSourceIo,
    read: (handle, buffer, position) => {
      const bytesRead = defaultSourceIo.read(handle, buffer, position);
      if (!done) {
        done = true;
        change();
      }
      return bytesRead;
    },
  };
  return { source, happened: () => done };
}

async function expectRefusal(promise: Promise<unknown>, message: string): Promise<void> {
  const error = await promise.then(
    () => new Error('expected a SnapshotError'),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SnapshotError);
  expect((error as SnapshotError).message).toBe(message);
  expect((error as SnapshotError).code).toBe(EXIT.archive);
}

// Not concurrent: the fault point is one shared switch.
describe.skipIf(!HAVE_PROC_FD)('the read-back during the copy (needs /proc/self/fd for its fault point)', () => {
  it.for([
    { name: 'inline', size: 3 * SLOT_BYTES + 5 },
    { name: 'threaded', size: THREAD_THRESHOLD_BYTES + SLOT_BYTES + 5 },
  ])('reads the archive file, not the buffers written: a byte flipped on its way to disk is refused by digest ($name)', async ({ size }, { root }) => {
    const unit = makeUnit(root, 'flip', patterned(size));
    const dest = join(root, 'd');
    const output = join(dest, 'x.zip');
    Object.assign(fault, { destDir: dest, corruptWrite: 2 });
    // tail.bin's CRC-32 is that of the bytes read back, so the CRC agrees with the file: only
    // SHA-256 against the bytes copied can tell, and does.
    await expectRefusal(snapshotTail({ unit, output, env: {}, cwd: root }), 'tail.bin digest disagrees with manifest');
    expect(fault.writes).toBeGreaterThan(2);
    expect(existsSync(output)).toBe(false);
    expect(tempLeftovers(dest)).toEqual([]);
  });

  const sizes = [
    { name: 'an empty tail', size: 0 },
    { name: 'a tail smaller than one buffer', size: 1000 },
    { name: 'a tail of exactly one read', size: SLOT_BYTES },
    { name: 'a tail one byte over a read', size: SLOT_BYTES + 1 },
    { name: 'a threaded tail one byte over a read', size: THREAD_THRESHOLD_BYTES + 1 },
  ];

  it.for(sizes)('reads back exactly the bytes copied, once, for $name ($size bytes)', async ({ size }, { root }) => {
    const payload = patterned(size);
    const unit = makeUnit(root, 'sizes', payload);
    const dest = join(root, 'd');
    const output = join(dest, 'x.zip');
    fault.destDir = dest;
    const outcome = await snapshotTail({ unit, output, env: {}, cwd: root });
    // Every byte of tail.bin came back from the file, and nothing else was read with it (the
    // closed archive's records are read through the file handle, not counted here).
    expect(fault.readBack).toBe(size);
    expect(outcome.manifest).toMatchObject({ bytes_copied: size, source_size_at_open: size, sha256: sha256(payload), capture_outcome: 'complete_bounded_read' });
    const back = await readArchive(output);
    expect(back.members.get('tail.bin')!.equals(payload)).toBe(true);
    expect(back.members.get('manifest.json')!.equals(manifestBytes(outcome.manifest))).toBe(true);
    if (HAVE_UNZIP) expect(spawnSync('unzip', ['-tq', output], { encoding: 'utf8' }).status).toBe(0);
  });

  it('reads back only the size at open of a tail that grows during the copy', async ({ root }) => {
    const original = patterned(3 * SLOT_BYTES + 5);
    const unit = makeUnit(root, 'grows', original);
    const dest = join(root, 'd');
    fault.destDir = dest;
    const { source, happened } = afterFirstRead(() => appendFileSync(tailPath(unit), Buffer.alloc(2 * SLOT_BYTES, 0xee)));
    const output = join(dest, 'g.zip');
    const outcome = await snapshotTail({ unit, output, env: {}, cwd: root }, { source });
    expect(happened()).toBe(true);
    expect(fault.readBack).toBe(original.length);
    expect(outcome.manifest).toMatchObject({ bytes_copied: original.length, source_size_at_open: original.length, sha256: sha256(original) });
    expect((await readArchive(output)).members.get('tail.bin')!.equals(original)).toBe(true);
  });

  it('reads back only what was copied of a tail cut short during the copy', async ({ root }) => {
    const original = patterned(3 * SLOT_BYTES + 5);
    const unit = makeUnit(root, 'shrinks', original);
    const dest = join(root, 'd');
    fault.destDir = dest;
    const { source, happened } = afterFirstRead(() => truncateSync(tailPath(unit), SLOT_BYTES + 10));
    const output = join(dest, 's.zip');
    const outcome = await snapshotTail({ unit, output, env: {}, cwd: root }, { source });
    expect(happened()).toBe(true);
    const copied = original.subarray(0, SLOT_BYTES + 10);
    expect(fault.readBack).toBe(copied.length);
    expect(outcome.manifest).toMatchObject({ bytes_copied: copied.length, capture_outcome: 'short_read', sha256: sha256(copied) });
    expect((await readArchive(output)).members.get('tail.bin')!.equals(copied)).toBe(true);
  });
});

describe.concurrent('the closed archive against what was read back', () => {
  const payload = patterned(5000);

  // The real validation, handed a read-back that does not match the closed archive.
  const shifted = (change: (readBack: ReadBackRegion) => ReadBack): Partial<SnapshotSeams> => ({
    validateArchive: (path, expected, readBack) => defaultSeams.validateArchive(path, expected, change(readBack as ReadBackRegion)),
  });

  it.for([
    {
      name: 'a region that starts elsewhere',
      change: (readBack: ReadBackRegion) => ({ ...readBack, start: readBack.start + 1 }),
      message: 'archive did not validate: tail.bin in the closed archive (5000 bytes at offset 58) is not what was read back (5000 bytes at offset 59)',
    },
    {
      name: 'a region one byte short',
      change: (readBack: ReadBackRegion) => ({ ...readBack, length: readBack.length - 1 }),
      message: 'archive did not validate: tail.bin in the closed archive (5000 bytes at offset 58) is not what was read back (4999 bytes at offset 58)',
    },
  ])('refuses $name (exit 5), publishing nothing', async ({ change, message }, { root }) => {
    const unit = makeUnit(root, 'region', payload);
    const output = join(root, 'd', 'r.zip');
    await expectRefusal(snapshotTail({ unit, output, env: {}, cwd: root }, shifted(change)), message);
    expect(existsSync(output)).toBe(false);
    expect(readdirSync(join(root, 'd'))).toEqual([]);
  });

  it('reports a read-back that failed where the contract reads tail.bin: after the member checks', async ({ root }) => {
    const unit = makeUnit(root, 'failed', payload);
    const dest = join(root, 'd');
    const failure: ReadBack = { failure: Object.assign(new Error('Input/output error'), { code: 'EIO', errno: 5 }) };
    await expectRefusal(
      snapshotTail({ unit, output: join(dest, 'f.zip'), env: {}, cwd: root }, { validateArchive: (path, expected) => validateArchive(path, expected, failure) }),
      'archive did not validate: [Errno 5] Input/output error',
    );
    // The same failure loses to a member check that comes first in the contract's order.
    let archivePath = '';
    let written: Record<string, unknown> = {};
    await snapshotTail(
      { unit, output: join(dest, 'ok.zip'), env: {}, cwd: root },
      {
        validateArchive: async (path, expected) => {
          archivePath = join(dest, 'copy.zip');
          written = expected;
          const { copyFile } = await import('node:fs/promises');
          await copyFile(path, archivePath);
        },
      },
    );
    const copy: FileHandle = await open(archivePath, 'r+');
    try {
      // Rename member "manifest.json" in the central directory to "manifest.jsoN".
      const bytes = Buffer.alloc((await copy.stat()).size);
      await copy.read(bytes, 0, bytes.length, 0);
      const at = bytes.lastIndexOf('manifest.json');
      await copy.write(Buffer.from('N'), 0, 1, at + 'manifest.jso'.length);
    } finally {
      await copy.close();
    }
    await expectRefusal(validateArchive(archivePath, written, failure), "unexpected archive members: ['manifest.jsoN', 'tail.bin']");
  });
});
