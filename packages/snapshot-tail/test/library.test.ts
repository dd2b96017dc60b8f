import { createWriteStream, existsSync, mkdirSync, readdirSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { appendFile, type FileHandle } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe as baseDescribe, expect } from 'vitest';
import yazl from 'yazl';
import {
  EXIT,
  SnapshotError,
  UsageError,
  archiveName,
  broadModeProblem,
  defaultDestDir,
  defaultSourceIo,
  ensureDestDir,
  groupThousands,
  jsonEqual,
  manifestBytes,
  openTail,
  osErrorText,
  parseArgs,
  planDestination,
  pythonErrorClass,
  pythonListRepr,
  snapshotTail,
  validateArchive,
  type SnapshotRequest,
  type SourceIo,
} from '../src/index.js';
import { it, makeUnit, readArchive, sha256, tailPath, tempLeftovers } from './helpers.js';

const describe = baseDescribe.concurrent;

async function expectSnapshotError(promise: Promise<unknown>, code: number, text?: string): Promise<SnapshotError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a SnapshotError');
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SnapshotError);
  expect((error as SnapshotError).code).toBe(code);
  if (text !== undefined) expect((error as SnapshotError).message).toContain(text);
  return error as SnapshotError;
}

function request(unit: string, extra: Partial<SnapshotRequest> = {}): SnapshotRequest {
  return { unit, env: {}, cwd: unit, ...extra };
}

async function buildZip(path: string, members: { name: string; data: Buffer | string; compress?: boolean }[]): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const member of members) {
    zip.addBuffer(Buffer.from(member.data), member.name, { compress: member.compress ?? false });
  }
  zip.end();
  const sink = zip.outputStream.pipe(createWriteStream(path));
  await once(sink, 'close');
}

describe('argv', () => {
  it('parses the options, last one winning, with = and unambiguous prefixes', () => {
    expect(parseArgs(['--unit', 'a', '--unit=b', '--js', '--out', 'x.zip'])).toEqual({
      kind: 'run',
      options: { unit: 'b', output: 'x.zip', json: true },
    });
  });

  it('treats an empty --dest or --output alone as not given', () => {
    expect(parseArgs(['--unit', 'u', '--dest', ''])).toEqual({ kind: 'run', options: { unit: 'u', json: false } });
    expect(parseArgs(['--unit', 'u', '--output='])).toEqual({ kind: 'run', options: { unit: 'u', json: false } });
  });

  it('names the later of --dest/--output in the conflict, even when a value is empty', () => {
    expect(() => parseArgs(['--unit', 'u', '--dest', 'd', '--output', ''])).toThrow(
      new UsageError('argument --output: not allowed with argument --dest'),
    );
    expect(() => parseArgs(['--unit', 'u', '--output', 'o', '--dest', 'd'])).toThrow(
      'argument --dest: not allowed with argument --output',
    );
  });

  it('reports missing values, flag values, unknown words, and a missing --unit', () => {
    expect(() => parseArgs(['--unit'])).toThrow('argument --unit: expected one argument');
    expect(() => parseArgs(['--unit', '--json'])).toThrow('argument --unit: expected one argument');
    expect(() => parseArgs(['--unit', 'u', '--json=yes'])).toThrow("argument --json: ignored explicit argument 'yes'");
    expect(() => parseArgs(['--unit', 'u', 'x', '--bogus'])).toThrow('unrecognized arguments: x --bogus');
    expect(() => parseArgs(['--dest', 'd'])).toThrow('the following arguments are required: --unit');
    expect(() => parseArgs(['--unit', 'a\0b'])).toThrow('argument --unit: embedded null byte');
  });

  it('answers --help and --version as soon as they are reached', () => {
    expect(parseArgs(['--help', '--bogus'])).toEqual({ kind: 'help' });
    expect(parseArgs(['-h'])).toEqual({ kind: 'help' });
    expect(parseArgs(['--vers'])).toEqual({ kind: 'version' });
  });
});

describe('destination decisions', () => {
  it('names default archives snapshot-<UTC stamp>-<8 hex>.zip', () => {
    expect(archiveName(new Date(Date.UTC(2026, 10, 29, 22, 27, 37)), 'bf73d604')).toBe('snapshot-20261129T222737Z-bf73d604.zip');
    expect(archiveName(new Date(Date.UTC(2027, 0, 2, 3, 4, 5)), '00000000')).toBe('snapshot-20270102T030405Z-00000000.zip');
  });

  it('builds the default destination from XDG_STATE_HOME, else HOME, without making it absolute', () => {
    expect(defaultDestDir({ xdgStateHome: '/s', home: '/h' })).toBe('/s/anywhere-agents/prun/snapshots');
    expect(defaultDestDir({ xdgStateHome: 'relxdg/' })).toBe('relxdg/anywhere-agents/prun/snapshots');
    expect(defaultDestDir({ home: '/h' })).toBe('/h/.local/state/anywhere-agents/prun/snapshots');
  });

  const plan = (output: string) =>
    planDestination({ output, env: {}, cwd: '/work', now: new Date(0), randomHex8: 'abcdef01' });

  it('takes --output as the exact final name, its parent as the directory', () => {
    expect(plan('out/x.zip')).toEqual({ destDir: '/work/out', final: '/work/out/x.zip' });
    expect(plan('/abs/./y.zip')).toEqual({ destDir: '/abs', final: '/abs/y.zip' });
  });

  it.for(['x/', 'a/.', 'a/..', '.', '..', ' x', 'x\t', 'd/x.zip\n'])('refuses the traversing --output %j', (output) => {
    expect(() => plan(output)).toThrow(new SnapshotError('output name may not traverse', EXIT.usage));
  });

  it('puts a default-named archive in --dest, or in the default directory', () => {
    const now = new Date(Date.UTC(2026, 0, 1));
    expect(planDestination({ dest: 'd', env: {}, cwd: '/w', now, randomHex8: '12345678' })).toEqual({
      destDir: '/w/d',
      final: '/w/d/snapshot-20260101T000000Z-12345678.zip',
    });
    expect(planDestination({ env: { xdgStateHome: '/x' }, cwd: '/w', now, randomHex8: '12345678' }).destDir).toBe(
      '/x/anywhere-agents/prun/snapshots',
    );
  });

  it('refuses any group or other bit and shows the permission bits with special bits', () => {
    expect(broadModeProblem('/d', 0o40700)).toBeNull();
    expect(broadModeProblem('/d', 0o41700)).toBeNull();
    expect(broadModeProblem('/d', 0o42750)).toBe(
      '/d is group- or world-accessible (mode 2750); refusing to write snapshots there. Fix with: chmod 700 /d',
    );
    expect(broadModeProblem('/d', 0o40701)).toContain('(mode 0701)');
  });

  it('creates a missing destination owner-only and refuses a broad existing one', ({ root }) => {
    const fresh = join(root, 'a', 'b', 'snapshots');
    expect(ensureDestDir(fresh)).toEqual({ created: true });
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
    expect(ensureDestDir(fresh)).toEqual({ created: false });
    const broad = join(root, 'broad');
    mkdirSync(broad);
    chmodSync(broad, 0o777);
    expect(() => ensureDestDir(broad)).toThrow(SnapshotError);
    expect(statSync(broad).mode & 0o777).toBe(0o777);
  });
});

describe('small formatters', () => {
  it('groups thousands like Python', () => {
    expect([0, 999, 1000, 1500, 1234567].map(groupThousands)).toEqual(['0', '999', '1,000', '1,500', '1,234,567']);
  });

  it("renders names as Python's list repr", () => {
    expect(pythonListRepr(['extra.txt', 'manifest.json'])).toBe("['extra.txt', 'manifest.json']");
    expect(pythonListRepr(["it's", 'a\nb'])).toBe(`["it's", 'a\\nb']`);
    // python3: repr(['a\x85b', '\xa0', '\u200b']); the old copy printed these three raw.
    expect(pythonListRepr(['a\x85b', '\xa0', '\u200b'])).toBe(`['a\\x85b', '\\xa0', '\\u200b']`);
  });

  it('compares JSON values ignoring key order', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: '1' })).toBe(false);
    expect(jsonEqual([1, 2], { 0: 1, 1: 2 })).toBe(false);
  });

  it('writes OS errors the way Python prints them', () => {
    const single = Object.assign(new Error('ENOENT: no such file or directory, open'), { code: 'ENOENT', errno: -2, path: '/x/tail' });
    expect(osErrorText(single)).toBe("[Errno 2] No such file or directory: '/x/tail'");
    const link = Object.assign(new Error('EPERM'), { code: 'EPERM', errno: -1, path: '/a', dest: '/b' });
    expect(osErrorText(link)).toBe("[Errno 1] Operation not permitted: '/a' -> '/b'");
    expect(pythonErrorClass(link)).toBe('PermissionError');
    expect(pythonErrorClass(Object.assign(new Error('x'), { code: 'EXDEV' }))).toBe('OSError');
  });
});

function fifoStats(real: import('node:fs').Stats): import('node:fs').Stats {
  return Object.assign(Object.create(Object.getPrototypeOf(real) as object) as import('node:fs').Stats, real, {
    isFile: () => false,
    isFIFO: () => true,
  });
}

describe('opening the source', () => {
  it('refuses a source whose stat reports a FIFO without opening it', async ({ root }) => {
    const unit = makeUnit(root, 'fifo-stat', 'data');
    let opened = false;
    const io: SourceIo = {
      ...defaultSourceIo,
      stat: async (path) => fifoStats(await defaultSourceIo.stat(path)),
      open: async (path) => {
        opened = true;
        return defaultSourceIo.open(path);
      },
    };
    await expectSnapshotError(openTail(tailPath(unit), io), EXIT.source, 'is not a regular file; refusing to snapshot it');
    expect(opened).toBe(false);
  });

  it('rejects a swap to a non-regular type after the open and closes the descriptor', async ({ root }) => {
    const unit = makeUnit(root, 'swap', 'data');
    let handle: FileHandle | undefined;
    const io: SourceIo = {
      ...defaultSourceIo,
      open: async (path) => (handle = await defaultSourceIo.open(path)),
      fstat: async (opened) => fifoStats(await opened.stat()),
    };
    await expectSnapshotError(openTail(tailPath(unit), io), EXIT.source, 'not a regular file');
    expect(handle?.fd).toBe(-1);
  });

  it('maps a failing open to exit 4 with the OS text', async ({ root }) => {
    const unit = makeUnit(root, 'emfile', 'data');
    const io: SourceIo = {
      ...defaultSourceIo,
      open: async () => {
        throw Object.assign(new Error('EMFILE'), { code: 'EMFILE', errno: -24 });
      },
    };
    await expectSnapshotError(openTail(tailPath(unit), io), EXIT.source, `cannot open ${tailPath(unit)}: [Errno 24] Too many open files`);
  });

  it('maps a failing read to exit 4, closes the descriptor and leaves no temporary file', async ({ root }) => {
    const unit = makeUnit(root, 'readfail', 'data'.repeat(1000));
    let handle: FileHandle | undefined;
    const dest = join(root, 'd');
    const source: SourceIo = {
      ...defaultSourceIo,
      open: async (path) => (handle = await defaultSourceIo.open(path)),
      read: async () => {
        throw Object.assign(new Error('EIO'), { code: 'EIO', errno: -5 });
      },
    };
    await expectSnapshotError(snapshotTail(request(unit, { dest }), { source }), EXIT.source, 'cannot read');
    expect(handle?.fd).toBe(-1);
    expect(readdirSync(dest)).toEqual([]);
  });
});

describe('bounded read', () => {
  it('copies exactly the size at open although the source grows right after the fstat', async ({ root }) => {
    const original = Buffer.alloc(1000, 'a');
    const unit = makeUnit(root, 'grow', original);
    const source: SourceIo = {
      ...defaultSourceIo,
      fstat: async (handle) => {
        const real = await handle.stat();
        await appendFile(tailPath(unit), Buffer.alloc(5000, 'b'));
        return real;
      },
    };
    const output = join(root, 'd', 'g.zip');
    const outcome = await snapshotTail(request(unit, { output }), { source });
    expect(statSync(tailPath(unit)).size).toBe(6000);
    expect(outcome.manifest).toMatchObject({ source_size_at_open: 1000, bytes_copied: 1000, sha256: sha256(original) });
    expect((await readArchive(output)).members.get('tail.bin')!.equals(original)).toBe(true);
  });

  it('records a read that ends early as short_read', async ({ root }) => {
    const unit = makeUnit(root, 'short', Buffer.alloc(100, 'z'));
    const source: SourceIo = {
      ...defaultSourceIo,
      read: async (handle, buffer, position) => (position >= 40 ? 0 : defaultSourceIo.read(handle, buffer.subarray(0, 40), position)),
    };
    const outcome = await snapshotTail(request(unit, { output: join(root, 'd', 's.zip') }), { source });
    expect(outcome.manifest).toMatchObject({ bytes_copied: 40, source_size_at_open: 100, capture_outcome: 'short_read' });
    expect(outcome.manifest.sha256).toBe(sha256(Buffer.alloc(40, 'z')));
  });

  it('never reads more than 1 MiB at a time', async ({ root }) => {
    const unit = makeUnit(root, 'chunks', Buffer.alloc(3 * 1024 * 1024 + 5, 1));
    const sizes: number[] = [];
    const source: SourceIo = {
      ...defaultSourceIo,
      read: (handle, buffer, position) => {
        sizes.push(buffer.length);
        return defaultSourceIo.read(handle, buffer, position);
      },
    };
    const outcome = await snapshotTail(request(unit, { output: join(root, 'd', 'c.zip') }), { source });
    expect(outcome.manifest.bytes_copied).toBe(3 * 1024 * 1024 + 5);
    expect(Math.max(...sizes)).toBe(1024 * 1024);
  });
});

describe('archive validation', () => {
  const data = Buffer.from('tail bytes');
  const expected = { bytes_copied: data.length, sha256: sha256(data) };

  it('accepts a matching two-member stored archive', async ({ root }) => {
    const path = join(root, 'ok.zip');
    await buildZip(path, [
      { name: 'tail.bin', data },
      { name: 'manifest.json', data: manifestBytes(expected) },
    ]);
    await expect(validateArchive(path, expected)).resolves.toBeUndefined();
  });

  it('rejects a corrupt archived manifest', async ({ root }) => {
    const path = join(root, 'corrupt.zip');
    await buildZip(path, [
      { name: 'tail.bin', data },
      { name: 'manifest.json', data: '{not json at all' },
    ]);
    await expectSnapshotError(validateArchive(path, expected), EXIT.archive, 'archive did not validate: ');
  });

  // Each case: how the archive (or the expected manifest) differs, and the exact refusal.
  const refusals: { name: string; tailCompressed?: boolean; extra?: boolean; archived?: object; given?: object; message: string }[] = [
    { name: 'an archived manifest that disagrees', archived: { ...expected, sha256: '0'.repeat(64) }, message: 'manifest.json disagrees with the manifest written' },
    { name: 'a compressed member', tailCompressed: true, message: 'tail.bin is not stored' },
    { name: 'an extra member', extra: true, message: "unexpected archive members: ['extra.txt', 'manifest.json', 'tail.bin']" },
    { name: 'a digest mismatch', given: { ...expected, sha256: sha256('other') }, message: 'tail.bin digest disagrees with manifest' },
    { name: 'a length mismatch on its own', given: { ...expected, bytes_copied: 99 }, message: 'tail.bin length disagrees with manifest' },
  ];

  it.for(refusals)('rejects $name', async (refusal, { root }) => {
    const path = join(root, 'case.zip');
    const given = refusal.given ?? expected;
    await buildZip(path, [
      { name: 'tail.bin', data, compress: refusal.tailCompressed ?? false },
      { name: 'manifest.json', data: manifestBytes(refusal.archived ?? given) },
      ...(refusal.extra ? [{ name: 'extra.txt', data: 'x' }] : []),
    ]);
    const error = await expectSnapshotError(validateArchive(path, given as Record<string, unknown>), EXIT.archive);
    expect(error.message).toBe(refusal.message);
  });

  it('rejects something that is not a ZIP at all', async ({ root }) => {
    const path = join(root, 'junk.zip');
    writeFileSync(path, 'not a zip');
    await expectSnapshotError(validateArchive(path, expected), EXIT.archive, 'archive did not validate: ');
  });
});

describe('publication and cleanup', () => {
  const payload = 'payload'.repeat(100);

  it('never falls back when the hard link fails for another reason (exit 6)', async ({ root }) => {
    const unit = makeUnit(root, 'eperm', payload);
    const output = join(root, 'd', 'x.zip');
    let links = 0;
    const error = await expectSnapshotError(
      snapshotTail(request(unit, { output }), {
        link: (temp, final) => {
          links += 1;
          throw Object.assign(new Error('EPERM'), { code: 'EPERM', errno: -1, path: temp, dest: final });
        },
      }),
      EXIT.publish,
    );
    expect(error.message).toMatch(
      /^cannot publish by hard link \(PermissionError: \[Errno 1\] Operation not permitted: '.*\/\.snap-part\.snapshot-tail-\d+-[0-9a-f]{16}\.tmp' -> '.*\/x\.zip'\); not falling back to a replacing operation$/,
    );
    expect(links).toBe(1);
    expect(existsSync(output)).toBe(false);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

  it('still succeeds when the temporary name cannot be removed, and says so', async ({ root }) => {
    const unit = makeUnit(root, 'unlink', payload);
    const output = join(root, 'd', 'x.zip');
    let unlinks = 0;
    const outcome = await snapshotTail(request(unit, { output }), {
      unlink: (path) => {
        unlinks += 1;
        throw Object.assign(new Error('EBUSY'), { code: 'EBUSY', errno: -16, path });
      },
    });
    expect(unlinks).toBe(1);
    expect(existsSync(output)).toBe(true);
    expect(outcome.warning).toMatch(/^published, but the temporary file .*\/\.snap-part\.snapshot-tail-\d+-[0-9a-f]{16}\.tmp remains: \[Errno 16\]/);
    expect(tempLeftovers(join(root, 'd'))).toHaveLength(1);
  });

  it('turns a writer failure into exit 5 and leaves neither temp nor final', async ({ root }) => {
    const unit = makeUnit(root, 'writer', payload);
    const output = join(root, 'd', 'x.zip');
    await expectSnapshotError(
      snapshotTail(request(unit, { output }), {
        writeArchive: async () => {
          throw new RangeError('out of memory while zipping');
        },
      }),
      EXIT.archive,
      'cannot build archive: out of memory while zipping',
    );
    expect(existsSync(output)).toBe(false);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

  it('turns a chmod failure of the temporary file into exit 6 and removes it', async ({ root }) => {
    const unit = makeUnit(root, 'chmod', payload);
    const output = join(root, 'd', 'x.zip');
    await expectSnapshotError(
      snapshotTail(request(unit, { output }), {
        chmodTemp: async () => {
          throw Object.assign(new Error('EPERM'), { code: 'EPERM', errno: -1 });
        },
      }),
      EXIT.publish,
      'cannot make',
    );
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
    expect(existsSync(output)).toBe(false);
  });

  it('publishes nothing when validation fails (exit 5)', async ({ root }) => {
    const unit = makeUnit(root, 'invalid', payload);
    const output = join(root, 'd', 'x.zip');
    await expectSnapshotError(
      snapshotTail(request(unit, { output }), {
        validateArchive: async () => {
          throw new SnapshotError('tail.bin digest disagrees with manifest', EXIT.archive);
        },
      }),
      EXIT.archive,
    );
    expect(existsSync(output)).toBe(false);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

  it('lets an unexpected error propagate but still removes the temporary file', async ({ root }) => {
    const unit = makeUnit(root, 'unexpected', payload);
    const output = join(root, 'd', 'x.zip');
    await expect(
      snapshotTail(request(unit, { output }), {
        validateArchive: async () => {
          throw new TypeError('boom');
        },
      }),
    ).rejects.toThrow(TypeError);
    expect(existsSync(output)).toBe(false);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

  it('lets exactly one of six concurrent in-process snapshots win one name', async ({ root }) => {
    const unit = makeUnit(root, 'race', payload);
    const output = join(root, 'd', 'one.zip');
    ensureDestDir(join(root, 'd'));
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => snapshotTail(request(unit, { output }))));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    for (const result of results) {
      if (result.status === 'rejected') expect((result.reason as SnapshotError).code).toBe(EXIT.collision);
    }
    expect(readdirSync(join(root, 'd'))).toEqual(['one.zip']);
    expect(statSync(output).mode & 0o777).toBe(0o600);
  });
});
