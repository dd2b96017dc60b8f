/**
 * Every file the dispatcher reads from a prompt or a state directory is opened without
 * blocking, checked to be a regular file and read with a bound: a FIFO or a device gets one
 * line and exit 2 at once (it used to hang, ignoring SIGTERM), a huge file is refused.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { MAX_CONVERSATION_ID_BYTES, MAX_PROMPT_BYTES } from '../src/index.js';
import { rootPool } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

function fifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

/** A sparse file of `size` bytes: costs no disk. */
function sparse(path: string, size: number): string {
  const fd = openSync(path, 'w');
  ftruncateSync(fd, size);
  closeSync(fd);
  return path;
}

/** A state directory from an earlier run whose conversation-id is `make(path)`. */
function earlierStateDir(dir: string, make: (path: string) => void): string {
  const stateDir = join(dir, 'prun-task-00000000-old-1-0000000000000000');
  mkdirSync(stateDir);
  make(join(stateDir, 'conversation-id'));
  return stateDir;
}

// A hang would run into the harness's timeout; each of these must end at once.
const QUICK = 10_000;

describe.concurrent('bounded reads', () => {
  test('a prompt file that is a FIFO or a device is "not found" at once, nothing created', async () => {
    for (const prompt of [(dir: string) => fifo(join(dir, 'prompt.fifo')), () => '/dev/zero']) {
      const root = pool.root();
      const path = prompt(root.dir);
      const run = await root.run({ args: ['--prompt-file', path], timeoutMs: QUICK });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`dispatch-task-agy: prompt file not found: ${path}\n`);
      expect(root.stateDirs()).toEqual([]);
    }
  });

  test(`a prompt over ${MAX_PROMPT_BYTES} bytes is refused`, async () => {
    const root = pool.root();
    const big = sparse(join(root.dir, 'big.md'), MAX_PROMPT_BYTES + 1);
    const run = await root.run({ args: ['--prompt-file', big], timeoutMs: QUICK });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`dispatch-task-agy: could not read prompt file: larger than ${MAX_PROMPT_BYTES} bytes: ${big}\n`);
    expect(root.workerCalls()).toEqual([]);
  });

  test('--continue-from a state dir whose conversation-id is a FIFO or a device: one line, exit 2, at once', async () => {
    for (const make of [(path: string) => fifo(path), (path: string) => symlinkSync('/dev/zero', path)]) {
      const root = pool.root();
      const old = earlierStateDir(root.dir, make);
      const run = await root.run({ args: ['--continue-from', old], timeoutMs: QUICK });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(`dispatch-task-agy: --continue-from conversation-id file is not a regular file: ${old}/conversation-id\n`);
      expect(root.stateDirs()).toEqual([old.slice(root.dir.length + 1)]);
    }
  });

  test(`a conversation-id over ${MAX_CONVERSATION_ID_BYTES} bytes is refused; a directory keeps the original's message`, async () => {
    const root = pool.root();
    const big = earlierStateDir(root.dir, (path) => sparse(path, MAX_CONVERSATION_ID_BYTES + 1));
    const run = await root.run({ args: ['--continue-from', big], timeoutMs: QUICK });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`dispatch-task-agy: --continue-from conversation-id file is larger than ${MAX_CONVERSATION_ID_BYTES} bytes: ${big}/conversation-id\n`);

    const other = pool.root();
    const dirInstead = join(other.dir, 'old');
    mkdirSync(join(dirInstead, 'conversation-id'), { recursive: true });
    const second = await other.run({ args: ['--continue-from', dirInstead], timeoutMs: QUICK });
    expect(second.code).toBe(2);
    expect(second.stderr).toBe(`dispatch-task-agy: --continue-from has no conversation-id file: ${dirInstead}/conversation-id\n`);
  });

  test('a regular conversation-id still resumes', async () => {
    const root = pool.root();
    const old = earlierStateDir(root.dir, (path) => writeFileSync(path, 'conv-42\n'));
    const run = await root.run({ args: ['--continue-from', old], timeoutMs: QUICK });
    expect(run.code).toBe(0);
    const argv = root.worker().argv;
    expect(argv.slice(argv.indexOf('--conversation'), argv.indexOf('--conversation') + 2)).toEqual(['--conversation', 'conv-42']);
  });

  test('a worker that swaps its tail for a FIFO cannot hang the dispatcher', async () => {
    const root = pool.root();
    const run = await root.run({ ownCwd: true, env: { FAKE_AGY_FIFO_TAIL: '1' }, timeoutMs: QUICK });
    // The capture reads as empty: no result event, so no result (a FALLBACK), and the run ends.
    expect(run.code).toBe(70);
    expect(readFileSync(root.result, 'utf8')).toMatch(/^# unit_a result \(FALLBACK, /);
  });
});
