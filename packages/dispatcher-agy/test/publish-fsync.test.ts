/**
 * How the result reaches the disk, watched with strace on the real bin (README, "How it works",
 * step 11): the temp file is fsynced before it is renamed onto the result path and the result's
 * directory is fsynced after, as ever, and both fsyncs wait on libuv's thread pool, not on the
 * thread that runs the dispatch: a batch's supervisor, which runs many units in one process,
 * goes on serving the others while one result is flushed (unit-state's publishAtomicAsync).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { BIN, rootPool } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const straceWorks = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', 'true']).status === 0;

interface Traced {
  tid: string;
  line: string;
}

test.skipIf(!straceWorks)(`the result's fsyncs keep their order and run off the dispatch's thread${straceWorks ? '' : ' (skipped: strace cannot trace here)'}`, () => {
  const root = pool.root();
  const trace = join(root.dir, 'trace');
  const env = { ...root.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off' };
  const run = spawnSync(
    'strace',
    ['-f', '-qq', '-e', 'trace=openat,fsync,rename', '-o', trace, process.execPath, BIN, '--prompt-file', root.prompt, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'],
    { env, cwd: root.dir, encoding: 'utf8', timeout: 60_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  expect(readFileSync(root.result, 'utf8')).toContain('# unit_a result');
  const calls: Traced[] = readFileSync(trace, 'utf8')
    .split('\n')
    .map((text) => /^(\d+) +(.*)$/.exec(text))
    .filter((match) => match !== null)
    .map((match) => ({ tid: match[1]!, line: match[2]! }));
  const fdOf = (call: Traced | undefined): string | undefined => /= (\d+)$/.exec(call?.line ?? '')?.[1];
  const renameAt = calls.findIndex((call) => call.line.startsWith('rename(') && call.line.includes(`, ${JSON.stringify(root.result)})`));
  expect(renameAt, 'the result is renamed into place').toBeGreaterThan(0);
  const dispatchThread = calls[renameAt]!.tid;
  const temp = /^rename\("([^"]+)"/.exec(calls[renameAt]!.line)![1]!;
  const tempOpenAt = calls.findIndex((call) => call.line.startsWith(`openat(AT_FDCWD, ${JSON.stringify(temp)}, O_WRONLY|O_CREAT|O_EXCL`));
  expect(tempOpenAt, 'the temp file is created exclusively before the rename').toBeGreaterThanOrEqual(0);
  expect(tempOpenAt).toBeLessThan(renameAt);
  const fsyncOf = (fd: string | undefined, from: number, to: number): Traced | undefined =>
    calls.slice(from, to).find((call) => fd !== undefined && new RegExp(`^fsync\\(${fd}\\) += 0$`).test(call.line));
  const fileFsync = fsyncOf(fdOf(calls[tempOpenAt]), tempOpenAt + 1, renameAt);
  expect(fileFsync, 'the temp file is fsynced before the rename').toBeDefined();
  const dirOpenAt = calls.findIndex((call, i) => i > renameAt && call.line.startsWith(`openat(AT_FDCWD, ${JSON.stringify(dirname(root.result))}, O_RDONLY`));
  expect(dirOpenAt, "the result's directory is opened after the rename").toBeGreaterThan(renameAt);
  const dirFsync = fsyncOf(fdOf(calls[dirOpenAt]), dirOpenAt + 1, calls.length);
  expect(dirFsync, "the result's directory is fsynced after the rename").toBeDefined();
  // Both waits on the thread pool: the thread that renamed (the dispatch's) never blocked on them.
  expect([fileFsync!.tid, dirFsync!.tid].filter((tid) => tid === dispatchThread)).toEqual([]);
});
