import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  openSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  DestinationExistsError,
  atomicTempPath,
  errorWords,
  isDirectory,
  isRegularFile,
  parseAtomicTempName,
  readHead,
  readHeadShared,
  readHeadText,
  removeStaleTemps,
  sleepSync,
  tryFlock,
  tryFlockSharedMany,
  which,
  writeFileAtomic,
  writeFileAtomicAsync,
} from '@prun/kit/fs';
import { PERL_SHARED } from '../src/fs/flock.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kit-fs-'));
});
afterEach(() => {
  chmodSync(dir, 0o755);
  rmSync(dir, { recursive: true, force: true });
});

const isRoot = process.getuid?.() === 0;
const probeModule = fileURLToPath(new URL('./fixtures/fs-probe.mjs', import.meta.url));
const mainAsNobody = fileURLToPath(new URL('../../../tools/main-as-nobody.mjs', import.meta.url));

/** Run a probe as an unprivileged user: as nobody when we are root (root ignores modes). */
async function unprivileged(kind: 'write' | 'read', path: string): Promise<unknown> {
  if (!isRoot) {
    const { probe } = (await import(probeModule)) as { probe: (k: string, p: string) => unknown };
    return JSON.parse(JSON.stringify(probe(kind, path)));
  }
  const result = spawnSync(process.execPath, [mainAsNobody, probeModule, kind, path], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`probe as nobody failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

describe('errorWords', () => {
  test("a failed call's strerror text, lower-cased; else its code; else its message", () => {
    const failed = (call: () => unknown): unknown => {
      try {
        call();
      } catch (error) {
        return error;
      }
      throw new Error('the call did not fail');
    };
    symlinkSync('loop', join(dir, 'loop'));
    expect(errorWords(failed(() => statSync(join(dir, 'loop'))))).toBe('too many levels of symbolic links');
    expect(errorWords(failed(() => statSync(join(dir, 'nowhere'))))).toBe('no such file or directory');
    expect(errorWords(Object.assign(new Error('odd'), { code: 'EWHATEVER' }))).toBe('EWHATEVER');
    expect(errorWords(new Error('plain'))).toBe('plain');
  });
});

describe('writeFileAtomic', () => {
  test('a publish replaces the inode: a hard link to the old file keeps the old bytes', () => {
    const path = join(dir, 'result.md');
    writeFileAtomic(path, 'old\n');
    const link = join(dir, 'old-link');
    linkSync(path, link);
    const before = statSync(path).ino;
    writeFileAtomic(path, 'new\n');
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    expect(readFileSync(link, 'utf8')).toBe('old\n');
    expect(statSync(path).ino).not.toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['old-link', 'result.md']);
  });

  test('a failed publish leaves no temp file and the old file untouched', () => {
    const path = join(dir, 'target');
    writeFileAtomic(path, 'kept');
    // Renaming a file over a non-empty directory fails after the temp file was written.
    const blocked = join(dir, 'blocked');
    mkdirSync(join(blocked, 'inside'), { recursive: true });
    expect(() => writeFileAtomic(blocked, 'x')).toThrow();
    expect(readdirSync(dir).sort()).toEqual(['blocked', 'target']);
    expect(readFileSync(path, 'utf8')).toBe('kept');
  });

  test('a write that cannot start (read-only directory) leaves nothing', async () => {
    chmodSync(dir, 0o755);
    const sub = join(dir, 'ro');
    mkdirSync(sub);
    chmodSync(sub, 0o555);
    expect(await unprivileged('write', join(sub, 'f'))).toEqual({ code: 'EACCES', left: [] });
    chmodSync(sub, 0o755);
  });

  test('replace: false never replaces; the loser gets DestinationExistsError and no temp remains', () => {
    const path = join(dir, 'once');
    writeFileAtomic(path, 'first', { replace: false });
    expect(() => writeFileAtomic(path, 'second', { replace: false })).toThrow(DestinationExistsError);
    expect(readFileSync(path, 'utf8')).toBe('first');
    expect(readdirSync(dir)).toEqual(['once']);
  });

  test('a writer streams its pieces into the temp file; a writer that throws publishes nothing', () => {
    const path = join(dir, 'streamed.md');
    writeFileAtomic(path, 'old\n');
    const seen: string[][] = [];
    writeFileAtomic(path, (write) => {
      write('caf');
      // Mid-publish, only the temp file holds the pieces written so far.
      seen.push(readdirSync(dir).filter((name) => name.endsWith('.tmp')));
      write(Uint8Array.from([0xc3, 0xa9]));
      write('\n');
    });
    expect(readFileSync(path, 'utf8')).toBe('caf\u00e9\n');
    expect(seen[0]).toHaveLength(1);
    expect(readFileSync(path, 'utf8')).not.toBe('old\n');
    expect(() =>
      writeFileAtomic(path, (write) => {
        write('partial');
        throw new Error('source failed');
      }),
    ).toThrow('source failed');
    expect(readFileSync(path, 'utf8')).toBe('caf\u00e9\n');
    expect(readdirSync(dir)).toEqual(['streamed.md']);
  });

  test('writeFileAtomicAsync publishes alike and fails alike, leaving no temp file', async () => {
    const path = join(dir, 'result.md');
    await writeFileAtomicAsync(path, 'old\n');
    await writeFileAtomicAsync(path, (write) => write('new\n'));
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    const blocked = join(dir, 'blocked');
    mkdirSync(join(blocked, 'inside'), { recursive: true });
    await expect(writeFileAtomicAsync(blocked, 'x')).rejects.toThrow();
    await expect(writeFileAtomicAsync(path, 'second', { replace: false })).rejects.toThrow(DestinationExistsError);
    expect(readdirSync(dir).sort()).toEqual(['blocked', 'result.md']);
    expect(readFileSync(path, 'utf8')).toBe('new\n');
  });

  test('writeFileAtomicAsync leaves the event loop free while the disk is flushed', async () => {
    const order: string[] = [];
    const published = writeFileAtomicAsync(join(dir, 'result.md'), 'x').then(() => order.push('published'));
    setImmediate(() => order.push('loop turned'));
    await published;
    expect(order).toEqual(['loop turned', 'published']);
  });

  test('a temp name already taken fails the publish and leaves that file alone', () => {
    const path = join(dir, 'result.md');
    const taken = atomicTempPath(path, { tag: 'prun', nonce: 'taken' });
    writeFileSync(taken, 'not ours');
    expect(() => writeFileAtomic(path, 'x', { nonce: 'taken' })).toThrow(/EEXIST/);
    expect(readFileSync(taken, 'utf8')).toBe('not ours');
    expect(existsSync(path)).toBe(false);
  });

  test('default nonces are 16 hex digits and do not repeat', () => {
    const names = Array.from({ length: 300 }, () => parseAtomicTempName(basename(atomicTempPath(join(dir, 'f'))))!.nonce);
    expect(names.every((nonce) => /^[0-9a-f]{16}$/.test(nonce))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
  });

  test('creates the parent, honours the mode, writes bytes as given', () => {
    const path = join(dir, 'a', 'b', 'c.bin');
    writeFileAtomic(path, Uint8Array.from([0, 255, 10]), { mode: 0o600, durable: false });
    expect([...readFileSync(path)]).toEqual([0, 255, 10]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test('temp names carry tag and pid and parse back', () => {
    const temp = atomicTempPath(join(dir, 'result.md'), { tag: 'dispatch-task-agy', nonce: 'abc123' });
    expect(temp).toBe(join(dir, `.result.md.dispatch-task-agy-${process.pid}-abc123.tmp`));
    expect(parseAtomicTempName(`.result.md.dispatch-task-agy-${process.pid}-abc123.tmp`)).toEqual({
      target: 'result.md',
      tag: 'dispatch-task-agy',
      pid: process.pid,
      nonce: 'abc123',
    });
    expect(parseAtomicTempName('.result.md.tmp')).toBeNull();
    expect(parseAtomicTempName('result.md.prun-12-ab.tmp')).toBeNull();
  });
});

describe('removeStaleTemps', () => {
  test("a dead writer's temp is removed, a live writer's and unrelated files are kept", async () => {
    // A pid that surely is dead: a child that has exited and been reaped.
    const child = spawn(process.execPath, ['-e', '']);
    const deadPid = child.pid as number;
    await new Promise((resolve) => child.on('close', resolve));
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      const livePid = live.pid as number;
      const stale = `.unit.prun-${deadPid}-aaaa.tmp`;
      const running = `.unit.prun-${livePid}-bbbb.tmp`;
      const mine = `.unit.prun-${process.pid}-cccc.tmp`;
      for (const name of [stale, running, mine, 'unit', '.unit.tmp']) writeFileSync(join(dir, name), 'x');
      expect(removeStaleTemps(dir)).toEqual([join(dir, stale)]);
      expect(readdirSync(dir).sort()).toEqual([running, mine, '.unit.tmp', 'unit'].sort());
    } finally {
      live.kill();
    }
  });

  test('tag and target narrow what is removed; an unlistable directory removes nothing', () => {
    writeFileSync(join(dir, '.a.prun-99999999-1.tmp'), '');
    writeFileSync(join(dir, '.a.other-99999999-1.tmp'), '');
    writeFileSync(join(dir, '.b.prun-99999999-1.tmp'), '');
    const dead = () => false;
    expect(removeStaleTemps(dir, { tag: 'prun', target: 'a', isAlive: dead })).toEqual([join(dir, '.a.prun-99999999-1.tmp')]);
    expect(removeStaleTemps(join(dir, 'missing'))).toEqual([]);
  });
});

describe('readHead', () => {
  test('reads at most maxBytes of a regular file, truncating or refusing the rest', () => {
    const path = join(dir, 'f');
    writeFileSync(path, 'hello world');
    expect(readHead(path, { maxBytes: 5 })).toEqual({ ok: true, bytes: Buffer.from('hello'), text: 'hello', truncated: true });
    expect(readHead(path, { maxBytes: 11, overflow: 'refuse' })).toMatchObject({ ok: true, text: 'hello world', truncated: false });
    expect(readHead(path, { maxBytes: 10, overflow: 'refuse' })).toEqual({ ok: false, problem: 'EntryTooLarge' });
  });

  test('reads a bounded range from an offset (a follower of an appended file)', () => {
    const path = join(dir, 'ranged');
    writeFileSync(path, 'hello world');
    expect(readHead(path, { maxBytes: 3, offset: 6 })).toEqual({ ok: true, bytes: Buffer.from('wor'), text: 'wor', truncated: true });
    expect(readHead(path, { maxBytes: 10, offset: 6 })).toMatchObject({ ok: true, text: 'world', truncated: false });
    expect(readHead(path, { maxBytes: 10, offset: 11 })).toMatchObject({ ok: true, text: '', truncated: false });
    expect(readHead(path, { maxBytes: 10, offset: 50 })).toMatchObject({ ok: true, text: '', truncated: false });
  });

  test('a large bound costs memory in proportion to the file, not to the bound', () => {
    const path = join(dir, 'small-under-a-big-bound');
    writeFileSync(path, 'x'.repeat(1000));
    const before = process.memoryUsage().arrayBuffers;
    expect(readHead(path, { maxBytes: 256 * 1024 * 1024 })).toMatchObject({ ok: true, text: 'x'.repeat(1000), truncated: false });
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 1024 * 1024);
  });

  test('a file longer than the first buffer is read whole, up to the bound', () => {
    const path = join(dir, 'large');
    const text = Array.from({ length: 40_000 }, (_, i) => `${i}\n`).join('');
    writeFileSync(path, text);
    expect(readHead(path, { maxBytes: 64 * 1024 * 1024 })).toMatchObject({ ok: true, text, truncated: false });
    expect(readHead(path, { maxBytes: 100_000 })).toMatchObject({ ok: true, text: text.slice(0, 100_000), truncated: true });
    expect(readHead(path, { maxBytes: text.length, overflow: 'refuse' })).toMatchObject({ ok: true, text, truncated: false });
    expect(readHead(path, { maxBytes: 100, offset: 1000 })).toMatchObject({ ok: true, text: text.slice(1000, 1100), truncated: true });
  });

  test('each result is its own copy, not a view of the shared buffer', () => {
    writeFileSync(join(dir, 'a'), 'aaaa');
    writeFileSync(join(dir, 'b'), 'bbbb');
    const a = readHead(join(dir, 'a'), { maxBytes: 4 });
    readHead(join(dir, 'b'), { maxBytes: 4 });
    expect(a.ok && a.bytes.toString()).toBe('aaaa');
  });

  test('a FIFO is refused at once, without blocking, even with no writer', () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const started = process.hrtime.bigint();
    // A blocking open of a writer-less FIFO would hang this test (and the whole worker) here.
    expect(readHead(fifo, { maxBytes: 10 })).toEqual({ ok: false, problem: 'NotARegularFile' });
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5000);
    // Through a symlink too.
    symlinkSync(fifo, join(dir, 'link'));
    expect(readHead(join(dir, 'link'), { maxBytes: 10 })).toEqual({ ok: false, problem: 'NotARegularFile' });
  });

  test('a device, a directory, a missing file, a bad path: typed refusals, never a throw', () => {
    expect(readHead('/dev/zero', { maxBytes: 10 })).toEqual({ ok: false, problem: 'NotARegularFile' });
    expect(readHead(dir, { maxBytes: 10 })).toEqual({ ok: false, problem: 'NotARegularFile' });
    expect(readHead(join(dir, 'none'), { maxBytes: 10 })).toEqual({ ok: false, problem: 'absent' });
    writeFileSync(join(dir, 'file'), 'x');
    expect(readHead(join(dir, 'file', 'below'), { maxBytes: 10 })).toEqual({ ok: false, problem: 'ENOTDIR' });
  });

  /** Files, bounds and refusals that readHead answers, for its variants to answer alike. */
  function headCases(): Array<[string, Parameters<typeof readHead>[1]]> {
    writeFileSync(join(dir, 'hello'), 'hello wörld');
    writeFileSync(join(dir, 'file'), 'x');
    writeFileSync(join(dir, 'empty'), '');
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    return [
      [join(dir, 'hello'), { maxBytes: 5 }],
      [join(dir, 'hello'), { maxBytes: 12, overflow: 'refuse' }],
      [join(dir, 'hello'), { maxBytes: 11, overflow: 'refuse' }],
      [join(dir, 'hello'), { maxBytes: 3, offset: 6 }],
      [join(dir, 'hello'), { maxBytes: 10, offset: 50 }],
      [join(dir, 'empty'), { maxBytes: 10 }],
      [fifo, { maxBytes: 10 }],
      [dir, { maxBytes: 10 }],
      [join(dir, 'none'), { maxBytes: 10 }],
      [join(dir, 'file', 'below'), { maxBytes: 10 }],
    ];
  }

  test('readHeadText answers as readHead does, text only, for files, bounds and refusals', () => {
    const cases = headCases();
    for (const [path, options] of cases) {
      const head = readHead(path, options);
      const expected = head.ok ? { ok: true, text: head.text, truncated: head.truncated } : head;
      expect(readHeadText(path, options)).toEqual(expected);
    }
    expect(readHeadText(join(dir, 'hello'), { maxBytes: 12 })).toEqual({ ok: true, text: 'hello wörld', truncated: false });
  });

  test('readHeadShared answers as readHead does, its bytes in the shared buffer, for files, bounds and refusals', () => {
    // A file whose stat says 0 bytes though it holds text: read to its end, not to that size.
    const cases = [...headCases(), ['/proc/self/status', { maxBytes: 64 * 1024 }] as [string, Parameters<typeof readHead>[1]]];
    for (const [path, options] of cases) {
      const head = readHead(path, options);
      const shared = readHeadShared(path, options);
      if (!head.ok) expect(shared).toEqual(head);
      else {
        expect(shared.ok).toBe(true);
        if (!shared.ok) continue;
        // /proc/self/status differs between two reads in its counters: its length and start say enough.
        if (path.startsWith('/proc/')) expect(shared.buffer.toString('utf8', 0, 5)).toBe(head.text.slice(0, 5));
        else expect([shared.buffer.toString('utf8', 0, shared.length), shared.truncated]).toEqual([head.text, head.truncated]);
      }
    }
    expect(readHeadShared('/proc/self/status', { maxBytes: 64 * 1024 })).toMatchObject({ ok: true });
    const status = readHeadShared('/proc/self/status', { maxBytes: 64 * 1024 });
    expect(status.ok && status.length).toBeGreaterThan(100);
  });

  test('a regular file is read to the size fstat gave, without a read that answers 0', () => {
    const path = join(dir, 'entry');
    writeFileSync(path, 'x'.repeat(100));
    const script = `import { readHead } from ${JSON.stringify(new URL('../dist/fs/index.js', import.meta.url).href)}; process.stdout.write('MARK'); readHead(${JSON.stringify(path)}, { maxBytes: 1000 }); process.stdout.write('MARK');`;
    const traced = spawnSync('strace', ['-f', '-e', 'trace=read,pread64,write', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
    if (traced.error) return void console.warn('kit: strace not available, read count not checked');
    // The calls between the two marks on stdout: the file's reads (its bytes, or an answer of 0).
    const between = traced.stderr.split('write(1, "MARK"')[1] ?? '';
    const reads = between.split('\n').filter((line) => /\b(read|pread64)\(\d+, "(x|")/.test(line));
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatch(/= 100$/);
  });

  test('an unreadable file gives its error code', async () => {
    chmodSync(dir, 0o755);
    const path = join(dir, 'secret');
    writeFileSync(path, 'x', { mode: 0o000 });
    expect(await unprivileged('read', path)).toEqual({ ok: false, problem: 'EACCES' });
  });
});

describe('which', () => {
  test('finds the first executable regular file on PATH, as shutil.which does', () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    mkdirSync(a);
    mkdirSync(b);
    writeFileSync(join(a, 'tool'), '', { mode: 0o644 });
    mkdirSync(join(a, 'dirtool'));
    writeFileSync(join(b, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(b, 'dirtool'), '#!/bin/sh\n', { mode: 0o755 });
    const env = { PATH: `${a}:${b}` };
    expect(which('tool', { env })).toBe(join(b, 'tool'));
    expect(which('dirtool', { env })).toBe(join(b, 'dirtool'));
    expect(which('missing', { env })).toBeNull();
    expect(which('tool', { env: { PATH: '' } })).toBeNull();
    // An empty PATH entry is the cwd.
    expect(which('tool', { env: { PATH: ':' }, cwd: b })).toBe(join(b, 'tool'));
    expect(which('./tool', { cwd: b })).toBe(join(b, 'tool'));
    expect(which('sh', { env: {} })).toMatch(/^\/(usr\/)?bin\/sh$/);
  });
});

describe('isDirectory and isRegularFile (os.path.isdir, os.path.isfile)', () => {
  test('follow links, and say false for anything else or any error', () => {
    mkdirSync(join(dir, 'd'));
    writeFileSync(join(dir, 'f'), 'x');
    symlinkSync(join(dir, 'd'), join(dir, 'link-to-d'));
    symlinkSync(join(dir, 'f'), join(dir, 'link-to-f'));
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const table = ['d', 'link-to-d', 'f', 'link-to-f', 'dangling', 'fifo', 'missing', 'f/under-a-file'].map((name) => [
      name,
      isDirectory(join(dir, name)),
      isRegularFile(join(dir, name)),
    ]);
    expect(table).toEqual([
      ['d', true, false],
      ['link-to-d', true, false],
      ['f', false, true],
      ['link-to-f', false, true],
      ['dangling', false, false],
      ['fifo', false, false],
      ['missing', false, false],
      ['f/under-a-file', false, false],
    ]);
  });
});

// The system calls of a publish, seen by strace: the file's fsync before the rename and, for a
// durable publish, the directory's fsync after it (what makes the new name survive a power cut).
const strace = which('strace');
const straceWorks = strace !== null && spawnSync(strace, ['-qq', '-e', 'trace=none', 'true']).status === 0;
const straceNote = straceWorks ? '' : ` (skipped: ${strace === null ? 'strace not on PATH' : 'strace cannot trace here'})`;
const kitFs = fileURLToPath(new URL('../dist/fs/index.js', import.meta.url));

/**
 * What strace saw of one publish (`writeFileAtomic`, or `writeFileAtomicAsync` awaited): whether
 * the temp file was fsynced before the rename and the directory after it, and every traced call
 * after the rename that still names the temp file.
 */
function publishCalls(path: string, durable: boolean, how: 'sync' | 'async' = 'sync'): { fileFsync: boolean; dirFsync: boolean; tempAfterRename: string[] } {
  const trace = join(dir, 'trace');
  const call = how === 'sync' ? 'writeFileAtomic' : 'await writeFileAtomicAsync';
  const script = `import { writeFileAtomic, writeFileAtomicAsync } from ${JSON.stringify(kitFs)}; ${call}(${JSON.stringify(path)}, 'x', { durable: ${durable} });`;
  const calls = 'trace=openat,fsync,rename,unlink,statx,newfstatat,lstat,stat';
  const run = spawnSync(strace as string, ['-f', '-qq', '-e', calls, '-o', trace, process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`traced publish failed: ${run.stderr}`);
  const lines = readFileSync(trace, 'utf8').split('\n').map((line) => line.replace(/^\d+ +/, ''));
  const renameAt = lines.findIndex((line) => line.startsWith('rename(') && line.includes(JSON.stringify(path)));
  expect(renameAt, 'the publish renames its temp file onto the path').toBeGreaterThan(0);
  const temp = /^rename\("([^"]+)"/.exec(lines[renameAt]!)![1]!;
  const fdOf = (line: string | undefined): string | undefined => /= (\d+)$/.exec(line ?? '')?.[1];
  const tempOpen = lines.slice(0, renameAt).findLast((line) => line.startsWith('openat(') && line.includes('O_CREAT|O_EXCL'));
  const tempFd = fdOf(tempOpen);
  const synced = (fd: string | undefined, span: string[]): boolean => fd !== undefined && span.some((line) => new RegExp(`^fsync\\(${fd}\\) += 0$`).test(line));
  const fileFsync = synced(tempFd, lines.slice(lines.indexOf(tempOpen as string), renameAt));
  const after = lines.slice(renameAt + 1);
  const dirOpenAt = after.findIndex((line) => line.startsWith(`openat(AT_FDCWD, ${JSON.stringify(dirname(path))}, O_RDONLY`));
  const dirFd = fdOf(after[dirOpenAt]);
  const dirFsync = dirOpenAt >= 0 && synced(dirFd, after.slice(dirOpenAt));
  return { fileFsync, dirFsync, tempAfterRename: after.filter((line) => line.includes(temp)) };
}

describe.skipIf(!straceWorks)(`writeFileAtomic's fsyncs, traced${straceNote}`, () => {
  test('a durable publish fsyncs the file before the rename and the directory after it', () => {
    expect(publishCalls(join(dir, 'sub', 'result.md'), true)).toEqual({ fileFsync: true, dirFsync: true, tempAfterRename: [] });
  });
  test('a publish with durable: false fsyncs neither', () => {
    expect(publishCalls(join(dir, 'sub', 'state'), false)).toEqual({ fileFsync: false, dirFsync: false, tempAfterRename: [] });
  });
  test('writeFileAtomicAsync fsyncs in the same order, on the thread pool', () => {
    expect(publishCalls(join(dir, 'sub', 'result.md'), true, 'async')).toEqual({ fileFsync: true, dirFsync: true, tempAfterRename: [] });
    expect(publishCalls(join(dir, 'sub', 'state'), false, 'async')).toEqual({ fileFsync: false, dirFsync: false, tempAfterRename: [] });
  });
});

describe('tryFlockSharedMany and sleepSync', () => {
  test('shares many locks in one go, says busy where an exclusive lock is held, and the locks stay on our descriptors', () => {
    const files = ['a', 'b', 'c'].map((name) => join(dir, name));
    for (const file of files) writeFileSync(file, '');
    const holder = openSync(files[1]!, 'r');
    expect(tryFlock(holder, 'exclusive')).toBe('acquired');
    const fds = files.map((file) => openSync(file, 'r'));
    try {
      expect(tryFlockSharedMany(fds)).toEqual(['acquired', 'busy', 'acquired']);
      // The shared locks outlive the helper process: an exclusive lock on a new description is refused.
      const other = openSync(files[0]!, 'r');
      expect(tryFlock(other, 'exclusive')).toBe('busy');
      closeSync(other);
    } finally {
      for (const fd of fds) closeSync(fd);
      closeSync(holder);
    }
    expect(tryFlockSharedMany([])).toEqual([]);
  });

  test('the perl helper itself answers, loading no module (the shell fallback would hide a broken one)', () => {
    const files = ['a', 'b'].map((name) => join(dir, name));
    for (const file of files) writeFileSync(file, '');
    const holder = openSync(files[1]!, 'r');
    expect(tryFlock(holder, 'exclusive')).toBe('acquired');
    const fds = files.map((file) => openSync(file, 'r'));
    try {
      // Every module perl loads is a file found and compiled at every call; END reports %INC.
      const probe = spawnSync('perl', ['-e', `END { print STDERR "loaded:", join(",", sort keys %INC), "\\n" }\n${PERL_SHARED}`, String(constants.errno.EWOULDBLOCK), '3', '4', '9'], {
        stdio: ['ignore', 'pipe', 'pipe', ...fds],
        encoding: 'utf8',
      });
      expect(probe.status).toBe(0);
      // acquired, busy (held exclusive elsewhere), and a descriptor that is not open.
      expect(probe.stdout).toBe('0\n1\n2\n');
      expect(probe.stderr).toBe('loaded:\n');
    } finally {
      for (const fd of fds) closeSync(fd);
      closeSync(holder);
    }
  });

  test('sleepSync blocks the thread for about the time asked', () => {
    const started = process.hrtime.bigint();
    sleepSync(30);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeGreaterThanOrEqual(29);
  });
});
