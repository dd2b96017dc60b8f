// When the ledger reaches the disk, watched with strace on the real bin (README, "The ledger"):
// every line is written with its own O_APPEND write as the state changes; a unit's `running`
// line is fsynced before that unit is handed to the supervisor (its start request on the
// socket), and every line written is fsynced before the driver waits again, runs an
// --on-unit-done hook, or exits. A new batch's `queued` lines are one write and one fsync. (The
// injected-fs unit test in ledger.test.ts checks the appender's own order.)
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

interface Call {
  call: 'write' | 'fsync' | 'start';
  /** For a ledger write: the status of each line it wrote; for a start request: the unit. */
  what: string[];
}

/** The driver's ledger writes and fsyncs and its start requests to the supervisor, in order. */
function ledgerCalls(trace: string): Call[] {
  const calls: Call[] = [];
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    const m = /^(write|pwrite64|writev|fsync|fdatasync)\(\d+<([^>]*)>(?:, (.*))?/.exec(line);
    if (m === null) continue;
    const [, call, target, rest = ''] = m;
    if (target!.endsWith('ledger.jsonl')) {
      if (call === 'fsync' || call === 'fdatasync') calls.push({ call: 'fsync', what: [] });
      // -s is large enough for whole lines: `\"status\":\"done\"` once per line written.
      else calls.push({ call: 'write', what: [...rest.matchAll(/\\"status\\":\\"([a-z]+)\\"/g)].map((s) => s[1]!) });
    } else if (target!.startsWith('socket:') && rest.startsWith('"{\\"op\\":\\"start\\"')) {
      calls.push({ call: 'start', what: [/\\"id\\":\\"([^\\"]+)\\"/.exec(rest)![1]!] });
    }
  }
  return calls;
}

it.skipIf(!hasStrace)(
  `fsyncs a unit's running line before its hand-over, and every line before the driver waits or exits (strace of the real bin${hasStrace ? '' : '; skipped: strace is missing or may not trace here'})`,
  async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    const units = ['f1', 'f2', 'f3'].map((id, i) => ({ id, prompt: `UNIT-ID:${id}`, model: 'fake-model-x', ...(i > 0 ? { depends_on: ['f1'] } : {}) }));
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
    const trace = join(box.root, 'trace');
    // Only the driver is traced (no -f): the dispatchers' own writes are theirs.
    const run = await execa('strace', ['-y', '-s', '4096', '-e', 'trace=write,writev,pwrite64,fsync,fdatasync', '-o', trace, process.execPath, prunBin, 'batch', 'plan.json', '--dir', 'fanout'], {
      reject: false,
      extendEnv: false,
      env: box.env,
      cwd: work,
    });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const calls = ledgerCalls(trace);
    const lines = ledger(join(work, 'fanout'));
    // Every line was written, each exactly once.
    expect(calls.flatMap((c) => (c.call === 'write' ? c.what : []))).toEqual(lines.map((line) => line.status));
    // The new batch's queued lines: one write, then its fsync, before anything else.
    expect(calls[0]).toEqual({ call: 'write', what: ['queued', 'queued', 'queued'] });
    expect(calls[1]).toEqual({ call: 'fsync', what: [] });
    const starts = calls.filter((c) => c.call === 'start').map((c) => c.what[0]);
    expect(starts.sort()).toEqual(['f1', 'f2', 'f3']);
    calls.forEach((c, i) => {
      if (c.call !== 'start') return;
      const before = calls.slice(0, i);
      const lastWrite = before.map((b) => b.call).lastIndexOf('write');
      const lastFsync = before.map((b) => b.call).lastIndexOf('fsync');
      // Its running line was written, and fsynced (with everything before it) before the hand-over.
      expect(before.some((b) => b.call === 'write' && b.what.includes('running')), `unit ${c.what[0]}: running line before its start request`).toBe(true);
      expect(lastFsync, `unit ${c.what[0]}: every ledger write fsynced before its start request`).toBeGreaterThan(lastWrite);
    });
    // f1's end is written at once, before f2 and f3 (which wait for it) are handed over: a driver
    // killed (kill -9) before the fsync that follows still leaves it in the file.
    const firstDependentStart = calls.findIndex((c) => c.call === 'start' && c.what[0] !== 'f1');
    const f1Done = calls.findIndex((c, i) => c.call === 'write' && c.what.includes('done') && calls.slice(0, i).filter((b) => b.call === 'write' && b.what.includes('done')).length === 0);
    expect(f1Done).toBeGreaterThan(-1);
    expect(f1Done).toBeLessThan(firstDependentStart);
    // Nothing written is left unsynced at the end.
    expect(calls.at(-1)?.call).toBe('fsync');
    // Fewer fsyncs than lines: a unit's end shares the fsync of the next unit's hand-over.
    expect(calls.filter((c) => c.call === 'fsync').length).toBeLessThan(lines.length);
  },
  60_000,
);
