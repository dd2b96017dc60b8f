// When the ledger reaches the disk, watched with strace on the real bin (README, "The ledger"):
// every line is written with its own O_APPEND write as the state changes; a unit's `running`
// line is fsynced before that unit is handed to the supervisor (its start request on the
// socket); a `done` or state-dir line shares the fsync of the next hand-over, and one that no
// hand-over follows is fsynced on its own within about 0.2 s while the batch goes on running,
// and before the driver exits. A new batch's `queued` lines are one write and one fsync. (The
// injected-fs unit test in ledger.test.ts checks the appender's own order.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { execa } from 'execa';
import { ledger, openGate, planUnit, prunBin, sandbox, waitFor, type Sandbox } from './helpers.js';

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
  /** For a ledger write: the unit of each line it wrote. */
  ids: string[];
  /** When (strace -ttt), in seconds. */
  at: number;
}

/** The driver's ledger writes and fsyncs and its start requests to the supervisor, in order. */
function ledgerCalls(trace: string): Call[] {
  const calls: Call[] = [];
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    const m = /^(\d+\.\d+) (write|pwrite64|writev|fsync|fdatasync)\(\d+<([^>]*)>(?:, (.*))?/.exec(line);
    if (m === null) continue;
    const [, time, call, target, rest = ''] = m;
    const at = Number(time);
    if (target!.endsWith('ledger.jsonl')) {
      if (call === 'fsync' || call === 'fdatasync') calls.push({ call: 'fsync', what: [], ids: [], at });
      // -s is large enough for whole lines: `\"status\":\"done\"` once per line written.
      else {
        const what = [...rest.matchAll(/\\"status\\":\\"([a-z]+)\\"/g)].map((s) => s[1]!);
        const ids = [...rest.matchAll(/\{\\"id\\":\\"([^\\"]+)\\"/g)].map((s) => s[1]!);
        calls.push({ call: 'write', what, ids, at });
      }
    } else if (target!.startsWith('socket:') && rest.startsWith('"{\\"op\\":\\"start\\"')) {
      calls.push({ call: 'start', what: [/\\"id\\":\\"([^\\"]+)\\"/.exec(rest)![1]!], ids: [], at });
    }
  }
  return calls;
}

/** Where in `calls` the write of `id`'s `done` line is, or -1. */
function doneWrite(calls: Call[], id: string): number {
  return calls.findIndex((c) => c.call === 'write' && c.ids.some((unit, k) => unit === id && c.what[k] === 'done'));
}

/** The README's bound (0.2 s) with room for a loaded machine: a line held until the batch ends waits far longer. */
const SYNC_WITHIN_S = 2;

it.skipIf(!hasStrace)(
  `fsyncs a unit's running line before its hand-over, a unit's end with the next hand-over or on its own within about 0.2 s, and everything before the driver exits (strace of the real bin${hasStrace ? '' : '; skipped: strace is missing or may not trace here'})`,
  async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    // f1 first; then f2 (instant) and f3 (held by a gate) at once: f2's end is followed by no
    // hand-over while f3 runs, so it must reach the disk on its own, not when the batch ends.
    const units = [planUnit('f1'), planUnit('f2', '', { depends_on: ['f1'] }), planUnit('f3', '[[gate f3]]', { depends_on: ['f1'] })];
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
    const trace = join(box.root, 'trace');
    // Only the driver is traced (no -f): the dispatchers' own writes are theirs.
    const run = execa('strace', ['-ttt', '-y', '-s', '4096', '-e', 'trace=write,writev,pwrite64,fsync,fdatasync', '-o', trace, process.execPath, prunBin, 'batch', 'plan.json', '--dir', 'fanout'], {
      reject: false,
      extendEnv: false,
      env: box.env,
      cwd: work,
    });
    const traced = (): Call[] => (existsSync(trace) ? ledgerCalls(trace) : []);
    await waitFor(() => {
      const calls = traced();
      const f2Done = doneWrite(calls, 'f2');
      return f2Done >= 0 && calls.slice(f2Done).some((c) => c.call === 'fsync');
    }, "an fsync of f2's done line while f3 still runs");
    openGate(box, 'f3');
    const result = await run;
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const calls = ledgerCalls(trace);
    const lines = ledger(join(work, 'fanout'));
    // Every line was written, each exactly once.
    expect(calls.flatMap((c) => (c.call === 'write' ? c.what : []))).toEqual(lines.map((line) => line.status));
    // The new batch's queued lines: one write, then its fsync, before anything else.
    expect(calls[0]).toMatchObject({ call: 'write', what: ['queued', 'queued', 'queued'] });
    expect(calls[1]).toMatchObject({ call: 'fsync' });
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
    // killed (kill -9) before the fsync that follows still leaves it in the file. It shares the
    // fsync of their hand-over: no fsync comes between its write and the first start after it.
    const f1Done = doneWrite(calls, 'f1');
    const firstDependentStart = calls.findIndex((c) => c.call === 'start' && c.what[0] !== 'f1');
    expect(f1Done).toBeGreaterThan(-1);
    expect(f1Done).toBeLessThan(firstDependentStart);
    expect(calls.slice(f1Done, firstDependentStart).filter((c) => c.call === 'fsync')).toHaveLength(1);
    // Every line reaches the disk soon after its write, whatever follows it.
    calls.forEach((c, i) => {
      if (c.call !== 'write') return;
      const synced = calls.slice(i).find((later) => later.call === 'fsync');
      expect(synced, `the write of ${c.ids.join(', ')} (${c.what.join(', ')}) is fsynced`).toBeDefined();
      expect(synced!.at - c.at, `the write of ${c.ids.join(', ')} (${c.what.join(', ')}) is fsynced within ${SYNC_WITHIN_S} s`).toBeLessThan(SYNC_WITHIN_S);
    });
    // f2's end was fsynced before f3 ended (the gate opened only after it), not with the batch's end.
    expect(doneWrite(calls, 'f2')).toBeLessThan(doneWrite(calls, 'f3'));
    // Nothing written is left unsynced at the end.
    expect(calls.at(-1)?.call).toBe('fsync');
    // Fewer fsyncs than lines: a unit's end shares the fsync of the next unit's hand-over.
    expect(calls.filter((c) => c.call === 'fsync').length).toBeLessThan(lines.length);
  },
  60_000,
);
