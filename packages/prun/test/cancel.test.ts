// `prun cancel DIR UNIT...` as a user types it in a second terminal, relative paths from a
// scratch directory: with the batch's driver alive (it notices, stops the unit through the
// dispatcher's signal path, never restarts it) and with the driver killed (cancel records it,
// so --resume does not run it), and an unknown id refused with nothing changed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, ledger, openGate, prun, planUnit, sandbox, waitFor, workerStarts, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const unit = planUnit;

/** The plan: `slow` holds its worker at a gate; `later` waits for a job slot; `after` depends on `slow`. */
function cancelPlan(root: string): void {
  writePlan(root, [unit('slow', '[[gate slow]]'), unit('later'), unit('after', '', { depends_on: ['slow'] })]);
}

/** Until the gated worker of `slow` has started (the fixture counts it before it waits). */
async function slowWorkerRunning(b: Sandbox, dir: string): Promise<void> {
  await waitFor(() => (workerStarts(b.logDir).slow ?? 0) === 1 && existsSync(dir) && ledger(dir).some((l) => l.id === 'slow' && l.state_dir !== null), "slow's worker");
}

describe('prun cancel', () => {
  it('with the driver alive: stops a running unit and withdraws a queued one; dependents fail; nothing restarts', async () => {
    box = sandbox();
    cancelPlan(box.root);
    const batch = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', '--json'], { env: box.env, cwd: box.root });
    const dir = join(box.root, 'fanout');
    await slowWorkerRunning(box, dir);

    const cancel = await prun(['cancel', 'fanout', 'slow', 'later'], { env: box.env, cwd: box.root });
    expect(cancel.exitCode).toBe(0);
    expect(String(cancel.stdout)).toMatch(/^cancelled slow: cancelled by prun cancel: dispatcher received SIGTERM[^\n]*\ncancelled later: cancelled by prun cancel \(pid \d+\) before it ran$/);

    const run = await batch;
    // Two cancelled and one failed behind a cancelled dependency: none of them done.
    expect(run.exitCode).toBe(3);
    expect(latestStatus(dir)).toEqual({ slow: 'cancelled', later: 'cancelled', after: 'failed' });
    const summary = JSON.parse(String(run.stdout)) as { counts: Record<string, number>; units: Array<{ id: string; note: string }> };
    expect(summary.counts).toMatchObject({ cancelled: 2, failed: 1 });
    expect(summary.units.find((u) => u.id === 'after')!.note).toBe('dependency slow cancelled');

    // The stop went through the dispatcher's normal path, recorded before the signal, and the
    // FALLBACK names the cancel and the signal.
    const slowLines = ledger(dir).filter((l) => l.id === 'slow') as Array<{ status: string; stop_reason?: string; stop_signal?: string; exit_code: number | null }>;
    expect(slowLines.some((l) => l.status === 'running' && l.stop_reason === 'cancel' && l.stop_signal === 'SIGTERM')).toBe(true);
    expect(slowLines.at(-1)!.exit_code).toBe(143);
    expect(readFileSync(join(dir, 'results', 'slow.md'), 'utf8')).toMatch(
      /^# slow result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; cancelled by prun cancel: dispatcher received SIGTERM/,
    );
    expect(readFileSync(join(dir, 'results', 'later.md'), 'utf8')).toMatch(/^# later result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; cancelled by prun cancel/);
    // The driver noticed and did not start them again; the request is gone.
    expect(workerStarts(box.logDir)).toEqual({ slow: 1 });
    expect(existsSync(join(dir, 'cancel', 'slow'))).toBe(false);

    // A resume leaves the cancelled units and their dependents alone.
    const resumed = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: box.root });
    expect(resumed.exitCode).toBe(3);
    expect(workerStarts(box.logDir)).toEqual({ slow: 1 });
  }, 60_000);

  it('with the driver killed: cancel stops the orphaned dispatcher itself, and --resume does not run it', async () => {
    box = sandbox();
    cancelPlan(box.root);
    const batch = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1'], { env: box.env, cwd: box.root });
    const dir = join(box.root, 'fanout');
    await slowWorkerRunning(box, dir);
    batch.kill('SIGKILL');
    await batch;
    // `later` had been handed over too, to wait in the supervisor for a worker slot.
    expect(latestStatus(dir)).toEqual({ slow: 'running', later: 'running', after: 'queued' });

    const cancel = await prun(['cancel', 'fanout', 'slow'], { env: box.env, cwd: box.root });
    expect(cancel.exitCode).toBe(0);
    expect(String(cancel.stdout)).toMatch(/^cancelled slow: cancelled by prun cancel: dispatcher received SIGTERM/);
    // Recorded by the cancel itself: the dependent fails at once, the rest is untouched.
    // (`later`, handed over but never started by the supervisor that drained, runs on --resume.)
    expect(latestStatus(dir)).toEqual({ slow: 'cancelled', later: 'running', after: 'failed' });

    // The gate opens now: were slow dispatched again, its worker would run to the end.
    openGate(box, 'slow');
    const resumed = await prun(['batch', '--resume', 'fanout', '--json'], { env: box.env, cwd: box.root });
    expect(resumed.exitCode).toBe(2);
    expect(latestStatus(dir)).toEqual({ slow: 'cancelled', later: 'done', after: 'failed' });
    expect(workerStarts(box.logDir)).toEqual({ slow: 1, later: 1 });
  }, 60_000);

  it('refuses an unknown unit id in one line with exit 2, changing nothing', async () => {
    box = sandbox();
    cancelPlan(box.root);
    const batch = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1'], { env: box.env, cwd: box.root });
    const dir = join(box.root, 'fanout');
    await slowWorkerRunning(box, dir);
    const before = readFileSync(join(dir, 'ledger.jsonl'));

    const cancel = await prun(['cancel', 'fanout', 'later', 'nope'], { env: box.env, cwd: box.root });
    expect(cancel.exitCode).toBe(2);
    expect(String(cancel.stderr)).toMatch(/^prun: \S+fanout has no unit nope; nothing was cancelled \(its units: slow, later, after\)$/);
    expect(String(cancel.stdout)).toBe('');
    expect(readFileSync(join(dir, 'ledger.jsonl'))).toEqual(before);
    expect(existsSync(join(dir, 'cancel'))).toBe(false);

    const notBatch = await prun(['cancel', 'plan.json', 'slow'], { env: box.env, cwd: box.root });
    expect(notBatch.exitCode).toBe(2);

    openGate(box, 'slow');
    expect((await batch).exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ slow: 'done', later: 'done', after: 'done' });
  }, 60_000);
});
