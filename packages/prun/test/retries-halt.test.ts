// `--retries N` (every attempt in the ledger, as follow-up turns) and `--halt now|soon,fail=N|P%`
// (how many units start, what becomes of the running ones, the exit code), typed as a user would.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, ledger, openGate, prun, planUnit, sandbox, waitFor, workerCalls, workerStarts, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const unit = planUnit;

interface Line {
  id: string;
  status: string;
  attempt?: number;
  retry?: number;
  note?: string;
  stop_reason?: string;
}

describe('--retries', () => {
  it('runs a failed unit again as a follow-up turn, up to N times, with every attempt in the ledger', async () => {
    box = sandbox();
    writePlan(box.root, [
      // Fails on its first turn only (the fixture ignores markers on a follow-up turn).
      unit('once', '[[agy EXIT=3]]'),
      // Records no conversation, so each retry starts afresh and fails again.
      unit('always', '[[agy EXIT=4]] [[agy NO_INIT_CONVERSATION_ID=1]]'),
      unit('fine'),
    ]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--retries', '2', '--json'], { env: box.env, cwd: box.root });
    const dir = join(box.root, 'fanout');
    expect(run.exitCode).toBe(1);
    expect(latestStatus(dir)).toEqual({ once: 'done', always: 'failed', fine: 'done' });
    expect(workerStarts(box.logDir)).toEqual({ once: 2, always: 3, fine: 1 });

    const lines = ledger(dir) as Line[];
    const of = (id: string, status: string) => lines.filter((l) => l.id === id && l.status === status);
    // always: three attempts, two of them retries, each failure recorded before its retry.
    expect([...new Set(of('always', 'running').map((l) => l.attempt))]).toEqual([1, 2, 3]);
    expect(of('always', 'failed').map((l) => [l.attempt, l.retry ?? 0])).toEqual([[1, 0], [2, 1], [3, 2]]);
    expect(of('always', 'queued').filter((l) => l.retry).map((l) => l.note)).toEqual([
      'failed: retry 1 of 2 (--retries), afresh (no conversation recorded)',
      'failed: retry 2 of 2 (--retries), afresh (no conversation recorded)',
    ]);
    // once: its retry continued the conversation, and only one retry was needed.
    expect(of('once', 'failed')).toHaveLength(1);
    expect(of('once', 'queued').at(-1)!.note).toMatch(/^failed: retry 1 of 2 \(--retries\), as a follow-up turn of \S+prun-task-/);
    const onceCalls = workerCalls(box.logDir).filter((call) => call.unit === 'once');
    expect(onceCalls[1]!.argv.join(' ')).toContain('--conversation conv-fixed-0001');
    // Every attempt's result is kept.
    expect(readFileSync(join(dir, 'results', 'always.attempt-1.md'), 'utf8')).toMatch(/^# always result \(FALLBACK, /);
    expect(readFileSync(join(dir, 'results', 'always.attempt-2.md'), 'utf8')).toMatch(/^# always result \(FALLBACK, /);
    expect(readFileSync(join(dir, 'results', 'once.md'), 'utf8')).toMatch(/^# once result\n/);
  }, 90_000);

  it('refuses a bad count before anything is created', async () => {
    box = sandbox();
    writePlan(box.root, [unit('a')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--retries', '-1'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(2);
    expect(existsSync(join(box.root, 'fanout'))).toBe(false);
  });
});

describe('--halt', () => {
  it('soon,fail=1: starts nothing more after the first failure, lets the running unit finish, exits 103', async () => {
    box = sandbox();
    writePlan(box.root, [unit('bad', '[[agy EXIT=3]]'), unit('slow', '[[gate slow]]'), unit('q1'), unit('q2')]);
    const dir = join(box.root, 'fanout');
    const batch = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2', '--halt', 'soon,fail=1', '--json'], { env: box.env, cwd: box.root });
    // slow is still running when bad fails: it holds at its gate until then.
    await waitFor(() => existsSync(dir) && latestStatus(dir).bad === 'failed', 'the failure');
    openGate(box, 'slow');
    const run = await batch;
    expect(run.exitCode).toBe(103);
    const summary = JSON.parse(String(run.stdout)) as { stopped_by: string; exit_code: number };
    expect(summary).toMatchObject({ stopped_by: 'halt', exit_code: 103 });
    expect(latestStatus(dir)).toEqual({ bad: 'failed', slow: 'done', q1: 'queued', q2: 'queued' });
    expect(workerStarts(box.logDir)).toEqual({ bad: 1, slow: 1 });
    expect(String(run.stderr)).toContain('prun: --halt soon,fail=1: 1 unit(s) failed; starting no more units, 1 running unit(s) finish');
  }, 60_000);

  it('now,fail=1: stops the running unit through the dispatcher (interrupted), and --resume runs the rest', async () => {
    box = sandbox();
    writePlan(box.root, [unit('bad', '[[agy EXIT=3]] [[gate bad]]'), unit('hang', '[[agy HANG=1]]'), unit('q1')]);
    const dir = join(box.root, 'fanout');
    const batch = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2', '--halt', 'now,fail=1'], { env: box.env, cwd: box.root });
    // The failure comes only once the hanging unit is certainly running.
    await waitFor(() => (workerStarts(box!.logDir).hang ?? 0) === 1 && existsSync(dir) && ledger(dir).some((l) => l.id === 'hang' && l.state_dir !== null), 'the hanging worker');
    openGate(box, 'bad');
    const run = await batch;
    expect(run.exitCode).toBe(103);
    expect(latestStatus(dir)).toEqual({ bad: 'failed', hang: 'interrupted', q1: 'queued' });
    const hang = (ledger(dir) as Line[]).filter((l) => l.id === 'hang');
    expect(hang.some((l) => l.status === 'running' && l.stop_reason === 'halt')).toBe(true);
    // The result, the ledger and the table name the halt, as a cancel names the cancel.
    const halted = /stopped by --halt now,fail=1: dispatcher received SIGTERM/;
    const result = readFileSync(join(dir, 'results', 'hang.md'), 'utf8');
    expect(result).toMatch(/^# hang result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; stopped by --halt now,fail=1: dispatcher received SIGTERM/);
    expect(result).toMatch(/\nOpen items: stopped by --halt now,fail=1: dispatcher received SIGTERM/);
    expect(hang.at(-1)!.note).toMatch(halted);
    expect(String(run.stdout)).toMatch(/^hang +interrupted .*stopped by --halt now,fail=1: dispatcher received SIGTERM/m);
    expect(workerStarts(box.logDir)).toEqual({ bad: 1, hang: 1 });

    // Without --halt the resume finishes what the halt left (the interrupted unit as a follow-up turn).
    const resumed = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: box.root });
    expect(resumed.exitCode).toBe(1);
    expect(latestStatus(dir)).toEqual({ bad: 'failed', hang: 'done', q1: 'done' });
  }, 60_000);

  it('soon,fail=50%: halts on the failure that reaches half of all units, not before', async () => {
    box = sandbox();
    writePlan(box.root, [unit('f1', '[[agy EXIT=3]]'), unit('f2', '[[agy EXIT=3]]'), unit('ok1'), unit('ok2')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', '--halt', 'soon,fail=50%'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(103);
    expect(workerStarts(box.logDir)).toEqual({ f1: 1, f2: 1 });
    expect(latestStatus(join(box.root, 'fanout'))).toEqual({ f1: 'failed', f2: 'failed', ok1: 'queued', ok2: 'queued' });
  }, 60_000);

  it('refuses a rule it cannot read, before anything is created', async () => {
    box = sandbox();
    writePlan(box.root, [unit('a')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--halt', 'now,fail=0'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(2);
    expect(String(run.stderr)).toMatch(/^prun: --halt must be now,fail=N or soon,fail=N .*got: now,fail=0$/);
    expect(existsSync(join(box.root, 'fanout'))).toBe(false);
  });
});
