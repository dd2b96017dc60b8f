// The read-only and never-blocks guarantees, over an adversarial corpus.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_FILES } from '@prun/unit-state';
import { BIN, cleanupTempDirs, makeUnit, runBin, runJson, tempDir, treeHash, unprivilegedSpawn, type JsonReport } from './helpers.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
  cleanupTempDirs();
});

function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

async function unixSocket(path: string): Promise<void> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
}

const raw = (...parts: (string | Buffer | number[])[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

/** Every kind of entry that could trip a careless reader, under one root. */
async function adversarialCorpus(): Promise<{ root: string; out: string }> {
  const root = tempDir();
  chmodSync(root, 0o755);
  const out = join(root, 'out');
  mkdirSync(out);
  writeFileSync(join(out, 'present.md'), '# u result\n');
  mkfifo(join(out, 'fifo.md'));

  // FIFOs as tail, result-file, result target and dispatch-pid: nothing ever writes to them.
  const fifoTail = makeUnit(root, 'fifo-tail', { tail: null, resultEntry: join(out, 'present.md') });
  mkfifo(join(fifoTail, 'tail'));
  const fifoEntry = makeUnit(root, 'fifo-entry', { tail: 'x' });
  mkfifo(join(fifoEntry, 'result-file'));
  const fifoTarget = makeUnit(root, 'fifo-target', { tail: 'x', resultEntry: join(out, 'fifo.md') });
  mkfifo(join(fifoTarget, 'dispatch-pid'));

  // A unix socket as tail and as the result-file.
  const socketUnit = makeUnit(root, 'socket', { tail: null });
  await unixSocket(join(socketUnit, 'tail'));
  await unixSocket(join(socketUnit, 'result-file'));

  // Symlinks: dangling and looping, as units and as entries; devices behind symlinks.
  symlinkSync(join(root, 'nowhere'), join(root, 'prun-task-dangling'));
  symlinkSync(join(root, 'prun-task-loop'), join(root, 'prun-task-loop'));
  const links = makeUnit(root, 'links', { tail: null });
  symlinkSync(join(links, 'nowhere'), join(links, 'tail'));
  symlinkSync(join(links, 'result-file'), join(links, 'result-file'));
  const devices = makeUnit(root, 'devices', { tail: null, resultEntry: '/dev/zero' });
  symlinkSync('/dev/null', join(devices, 'tail'));
  symlinkSync('/dev/zero', join(devices, 'dispatch-pid'));

  // A directory named result-file; entries over the cap; NUL and invalid UTF-8 in entries.
  const dirEntry = makeUnit(root, 'dir-entry', { tail: 'x' });
  mkdirSync(join(dirEntry, 'result-file'));
  makeUnit(root, 'big', { tail: 'x', resultEntry: 'y'.repeat(70 * 1024), dispatchPid: '9'.repeat(65537) });
  makeUnit(root, 'nul', { tail: 'x', resultEntry: raw('/tmp/a', [0], 'b.md'), dispatchPid: raw('12', [0], '34') });
  makeUnit(root, 'badutf8-entry', { tail: 'x', resultEntry: raw(out, '/', [0xff, 0xfe], '.md') });

  // A unit whose own name is not UTF-8, holding a file whose name is not UTF-8 either.
  const oddUnit = raw(root, '/prun-task-', [0xff, 0xfe, 0x80]);
  mkdirSync(oddUnit);
  writeFileSync(raw(oddUnit, '/tail'), 'abcde');
  writeFileSync(raw(oddUnit, '/result-file'), 'r.md\n');
  writeFileSync(raw(oddUnit, '/r.md'), 'result');
  writeFileSync(raw(oddUnit, '/', [0xc3, 0x28]), 'stray');

  // Unreadable files and an unreadable unit (root still reads them; an unprivileged user cannot).
  const locked = makeUnit(root, 'locked-files', { tail: 'tail!', resultEntry: join(out, 'present.md'), dispatchPid: '1' });
  for (const name of ['tail', 'result-file', 'dispatch-pid']) chmodSync(join(locked, name), 0o000);
  const lockedUnit = makeUnit(root, 'locked-unit', { tail: 'x', resultEntry: join(out, 'present.md') });
  chmodSync(lockedUnit, 0o000);

  // Empty directories, inside and outside units.
  makeUnit(root, 'empty', { tail: null });
  mkdirSync(join(root, 'prun-task-empty', 'work'));
  mkdirSync(join(root, 'not-a-unit'));
  // A plain file and a FIFO with the unit prefix: not units, skipped without opening.
  writeFileSync(join(root, 'prun-task-file'), 'not a unit');
  mkfifo(join(root, 'prun-task-fifo'));
  return { root, out };
}

describe('the tree hash itself', () => {
  it('notices every kind of change a writer could make', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'u', { tail: 'abc' });
    symlinkSync('target-a', join(unit, 'link'));
    const changes: (() => void)[] = [
      () => writeFileSync(join(unit, 'tail'), 'abd'),
      () => chmodSync(join(unit, 'tail'), 0o600),
      () => utimesSync(join(unit, 'tail'), new Date(1_000_000), new Date(1_000_000)),
      () => mkdirSync(join(unit, 'empty-dir')),
      () => {
        rmSync(join(unit, 'link'));
        symlinkSync('target-b', join(unit, 'link'));
      },
      () => writeFileSync(join(root, 'stray'), ''),
    ];
    for (const change of changes) {
      const before = treeHash(root);
      change();
      expect(treeHash(root)).not.toBe(before);
    }
  });
});

const SWEEPS: string[][] = [
  ['--json', '--summary', '--include-legacy-pid'],
  ['--summary', '--include-legacy-pid', '--sort', 'tail-bytes-desc'],
  ['--json', '--min-tail-bytes', '3'],
];

describe('read-only and never blocking', () => {
  it('changes nothing in an adversarial tree, and classifies each trap', async () => {
    const { root, out } = await adversarialCorpus();
    const before = treeHash(root);
    for (const args of SWEEPS) {
      const run = runBin(['--root', root, ...args], { timeout: 20_000 });
      expect(run.timedOut, `blocked on ${args.join(' ')}`).toBe(false);
      expect(run.status).toBe(1);
    }
    const { report, byName } = runJson(root, ['--include-legacy-pid'], { timeout: 20_000 });
    expect(treeHash(root)).toBe(before);

    const errorsOf = (name: string) => byName.get(`prun-task-${name}`)?.errors;
    expect(byName.get('prun-task-fifo-tail')).toMatchObject({ tail_bytes: null, result: 'present' });
    expect(errorsOf('fifo-tail')).toEqual([{ stage: 'tail', error: 'NotARegularFile' }]);
    expect(errorsOf('fifo-entry')).toEqual([{ stage: 'result-entry', error: 'NotARegularFile' }]);
    expect(errorsOf('fifo-target')).toEqual([
      { stage: 'result-target', error: 'NotARegularFile' },
      { stage: 'legacy-pid', error: 'NotARegularFile' },
    ]);
    expect(errorsOf('socket')).toEqual([
      { stage: 'result-entry', error: 'NotARegularFile' },
      { stage: 'tail', error: 'NotARegularFile' },
    ]);
    expect(byName.get('prun-task-links')).toMatchObject({ result_path_state: 'unreadable', tail_bytes: 0 });
    expect(errorsOf('links')).toEqual([{ stage: 'result-entry', error: 'OSError' }]);
    expect(errorsOf('devices')).toEqual([
      { stage: 'result-target', error: 'NotARegularFile' },
      { stage: 'tail', error: 'NotARegularFile' },
      { stage: 'legacy-pid', error: 'NotARegularFile' },
    ]);
    expect(errorsOf('dir-entry')).toEqual([{ stage: 'result-entry', error: 'NotARegularFile' }]);
    expect(errorsOf('big')).toEqual([
      { stage: 'result-entry', error: 'EntryTooLarge' },
      { stage: 'legacy-pid', error: 'EntryTooLarge' },
    ]);
    expect(errorsOf('nul')).toEqual([{ stage: 'result', error: 'ValueError' }]);
    expect(byName.get('prun-task-nul')?.legacy_pid_unverified).toBe('12\u000034');
    expect(byName.get('prun-task-badutf8-entry')).toMatchObject({
      result: 'missing',
      result_target: `${out}/\udcff\udcfe.md`,
      errors: [],
    });
    expect(byName.get('prun-task-\udcff\udcfe\udc80')).toMatchObject({
      result_path_state: 'resolved',
      result: 'present',
      result_target: `${root}/prun-task-\udcff\udcfe\udc80/r.md`,
      tail_bytes: 5,
      errors: [],
    });
    expect(report.discovery_errors).toEqual([
      { stage: 'unit-entry', unit: join(root, 'prun-task-dangling'), error: 'FileNotFoundError' },
      { stage: 'unit-entry', unit: join(root, 'prun-task-loop'), error: 'OSError' },
    ]);
    expect(byName.has('prun-task-file')).toBe(false);
    expect(byName.has('prun-task-fifo')).toBe(false);
    if (process.getuid?.() === 0) {
      // Root is not denied by mode 000, so these read normally; the unprivileged run below covers denial.
      expect(byName.get('prun-task-locked-files')).toMatchObject({ result: 'present', tail_bytes: 5, errors: [] });
    }
  });

  it.skipIf(unprivilegedSpawn() === null)('changes nothing and reports denials when run unprivileged', async () => {
    const { root } = await adversarialCorpus();
    const before = treeHash(root);
    const { report, byName, timedOut } = runJson(root, ['--include-legacy-pid', '--summary'], {
      timeout: 20_000,
      ...unprivilegedSpawn(),
    });
    expect(timedOut).toBe(false);
    expect(treeHash(root)).toBe(before);
    expect(byName.get('prun-task-locked-files')?.errors).toEqual([
      { stage: 'result-entry', error: 'PermissionError' },
      { stage: 'legacy-pid', error: 'PermissionError' },
    ]);
    // The unit directory itself is locked: every entry in it is denied, none is called absent.
    expect(byName.get('prun-task-locked-unit')).toMatchObject({ result_path_state: 'unreadable', tail_bytes: null });
    expect(report.summary?.units).toBe(report.unit_count);
  });

  it('never blocks on a FIFO as tail, result-file and result target with no writer', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'fifos', { tail: null });
    mkfifo(join(unit, 'tail'));
    mkfifo(join(unit, 'result-file'));
    const other = makeUnit(root, 'fifo-target', { tail: 'x', resultEntry: join(root, 'target-fifo') });
    mkfifo(join(root, 'target-fifo'));
    const fifoRoot = join(tempDir(), 'fifo-root');
    mkfifo(fifoRoot);
    const run = runBin(['--root', root, '--root', fifoRoot, '--json'], { timeout: 10_000 });
    expect(run.timedOut).toBe(false);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout) as JsonReport;
    const byUnit = new Map(report.units.map((u) => [u.unit, u]));
    expect(byUnit.get(unit)?.errors).toEqual([
      { stage: 'result-entry', error: 'NotARegularFile' },
      { stage: 'tail', error: 'NotARegularFile' },
    ]);
    expect(byUnit.get(other)?.errors).toEqual([{ stage: 'result-target', error: 'NotARegularFile' }]);
    expect(report.discovery_errors).toEqual([{ stage: 'root', root: fifoRoot, error: 'NotADirectoryError' }]);
  });
});

const WRITE_FLAGS = /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND|O_TMPFILE/;
const MUTATING_CALLS = /^(creat|mkdir|mkdirat|unlink|unlinkat|rename|renameat|renameat2|link|linkat|symlink|symlinkat)\(/;

function straceAvailable(): boolean {
  const probe = spawnSync('strace', ['-f', '-qq', '-e', 'trace=openat', '-o', '/dev/null', 'true']);
  return probe.status === 0;
}

const hasStrace = straceAvailable();
if (!hasStrace) console.warn('report-state: strace is not installed (or cannot trace here); the syscall-level read-only check is skipped');

describe.skipIf(!hasStrace)('under strace', () => {
  it('opens nothing for writing and creates, removes or renames nothing', async () => {
    const { root } = await adversarialCorpus();
    const logDir = tempDir();
    for (const [i, args] of SWEEPS.entries()) {
      const log = join(logDir, `trace-${i}`);
      const run = spawnSync(
        'strace',
        [
          '-f', '-qq', '-o', log,
          '-e', 'trace=openat,open,creat,mkdir,mkdirat,unlink,unlinkat,rename,renameat,renameat2,link,linkat,symlink,symlinkat',
          process.execPath, BIN, '--root', root, ...args,
        ],
        { timeout: 30_000, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
      );
      expect(run.status).toBe(1);
      const calls = readFileSync(log, 'utf8')
        .split('\n')
        .map((line) => line.replace(/^\d+\s+/, ''))
        .filter((line) => line !== '' && !line.startsWith('<...') && !line.startsWith('+++'));
      expect(calls.some((call) => call.startsWith('openat('))).toBe(true);
      const offending = calls.filter(
        (call) => MUTATING_CALLS.test(call) || (/^(open|openat)\(/.test(call) && WRITE_FLAGS.test(call)),
      );
      expect(offending).toEqual([]);
    }
  });
});

describe.skipIf(!hasStrace)('system calls per unit, under strace', () => {
  it('a usual unit costs stat, open, fstat, one read, close and two stats: the read that reaches the size fstat gave is the last', () => {
    const root = tempDir();
    const out = join(root, 'out');
    mkdirSync(out);
    const names = ['a', 'b', 'c'];
    for (const name of names) writeFileSync(join(out, `${name}.md`), `# ${name}\n`);
    const units = names.map((name) => makeUnit(root, name, { resultEntry: `${out}/${name}.md\n`, tail: 'x'.repeat(10) }));
    const log = join(tempDir(), 'trace');
    const run = spawnSync(
      'strace',
      ['-f', '-qq', '-o', log, '-e', 'trace=%stat,%file,%desc', process.execPath, BIN, '--root', root, '--json'],
      { timeout: 30_000, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
    );
    expect(run.status).toBe(0);
    const calls = readFileSync(log, 'utf8')
      .split('\n')
      .map((line) => line.replace(/^\d+\s+/, ''));
    for (const [i, unit] of units.entries()) {
      const entry = `"${unit}/${STATE_FILES.resultFile}"`;
      const opened = calls.findIndex((call) => call.startsWith('openat(') && call.includes(entry));
      expect(opened).toBeGreaterThan(-1);
      const fd = /= (\d+)$/.exec(calls[opened]!)?.[1];
      expect(fd).toBeDefined();
      const closed = calls.findIndex((call, i) => i > opened && call.startsWith(`close(${fd})`));
      const onEntry = calls.slice(opened + 1, closed).filter((call) => call.startsWith(`read(${fd},`) || call.startsWith(`pread64(${fd},`));
      expect(onEntry).toHaveLength(1);
      expect(calls.filter((call) => call.includes(entry))).toHaveLength(2);
      expect(calls.filter((call) => call.includes(`"${out}/${names[i]}.md"`) || call.includes(`"${unit}/${STATE_FILES.tail}"`))).toHaveLength(2);
    }
  });
});
