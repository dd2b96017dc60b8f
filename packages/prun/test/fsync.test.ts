// Each ledger append reaches the disk before prun goes on: watched with strace on the real bin,
// every write(2) to ledger.jsonl is followed, on the same descriptor and before any other ledger
// write, by fsync(2). (The injected-fs unit test in ledger.test.ts checks the same order.)
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { execa } from 'execa';
import { ledger, prunBin, sandbox, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const hasStrace = spawnSync('strace', ['-f', '-o', '/dev/null', 'true']).status === 0;

it.skipIf(!hasStrace)(`fsyncs every ledger line before the next one (strace of the real bin${hasStrace ? '' : '; skipped: strace is missing or may not trace here'})`, async () => {
  box = sandbox();
  const work = join(box.root, 'work');
  mkdirSync(work);
  const units = ['f1', 'f2', 'f3'].map((id, i) => ({ id, prompt: `UNIT-ID:${id}`, model: 'fake-model-x', ...(i > 0 ? { depends_on: ['f1'] } : {}) }));
  writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
  const trace = join(box.root, 'trace');
  // Only the driver is traced (no -f): the dispatchers' own writes are theirs.
  const run = await execa('strace', ['-y', '-e', 'trace=write,pwrite64,fsync,fdatasync', '-o', trace, process.execPath, prunBin, 'batch', 'plan.json', '--dir', 'fanout'], {
    reject: false,
    extendEnv: false,
    env: box.env,
    cwd: work,
  });
  expect(run.exitCode, String(run.stderr)).toBe(0);
  const calls = readFileSync(trace, 'utf8')
    .split('\n')
    .map((line) => /^(write|pwrite64|fsync|fdatasync)\((\d+)<([^>]*ledger\.jsonl)>/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ call: m[1]!, fd: m[2]! }));
  const writes = calls.filter((c) => c.call === 'write' || c.call === 'pwrite64');
  expect(writes.length).toBe(ledger(join(work, 'fanout')).length);
  calls.forEach((c, i) => {
    if (c.call !== 'write' && c.call !== 'pwrite64') return;
    const next = calls[i + 1];
    expect(next, `write ${i} of the ledger is followed by its fsync`).toEqual({ call: expect.stringMatching(/^f(data)?sync$/), fd: c.fd });
  });
}, 60_000);
