// The unit handed over ahead (README, "Supervision"): with every worker slot taken, the driver
// hands its supervisor one unit more, which waits there unrecorded and starts as soon as a
// worker exits. What a user can see and do with it: status names it, the --jobs limit holds for
// workers, and a cancel, a signal or a killed driver never lose it nor run it twice (a killed
// supervisor: supervise.test.ts and review15.test.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { unitsAhead } from '../src/schedule.js';
import { NOT_STARTED_DETAIL } from '../src/status.js';
import { handedOver, latestStatus, ledger, openGate, planUnit, prun, processesUnder, sandbox, waitFor, workerStarts, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

/** `a` holds its worker at a gate, `b` can only wait for a's slot (--jobs 1); the sandbox is the test's `box`. */
function startAhead(args: string[] = []): { b: Sandbox; dir: string; run: ReturnType<typeof prun> } {
  const b = sandbox();
  box = b;
  writePlan(b.root, [planUnit('a', '[[gate a]]'), planUnit('b')]);
  const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', ...args], { env: b.env, cwd: b.root });
  return { b, dir: join(b.root, 'fanout'), run };
}

/** Until `a`'s worker waits at its gate and `b` is handed over behind it (its `running` line written). */
async function bWaiting(b: Sandbox, dir: string): Promise<void> {
  await waitFor(
    () => existsSync(dir) && handedOver(dir, 'a') && workerStarts(b.logDir).a === 1 && ledger(dir).some((l) => l.id === 'b' && l.status === 'running'),
    "a's worker at its gate and b handed over behind it",
  );
}

describe('the unit handed over ahead', () => {
  it('is decided by one rule: one ahead, none under --halt or --no-quota-wait, none while adopted units run', () => {
    expect(unitsAhead({ halt: false, quotaWait: true, adoptedRunning: 0 })).toBe(1);
    expect(unitsAhead({ halt: true, quotaWait: true, adoptedRunning: 0 })).toBe(0);
    expect(unitsAhead({ halt: false, quotaWait: false, adoptedRunning: 0 })).toBe(0);
    expect(unitsAhead({ halt: false, quotaWait: true, adoptedRunning: 1 })).toBe(0);
  });

  it('waits in the supervisor without a worker; prun status from another shell says so; it starts once the slot frees', async () => {
    const { b, dir, run } = startAhead();
    await bWaiting(b, dir);
    // Handed over, not started: no record in the supervisor, no worker, --jobs 1 holds.
    expect(handedOver(dir, 'b')).toBe(false);
    const status = await prun(['status', 'fanout'], { env: b.env, cwd: b.root });
    expect(status.exitCode).toBe(0);
    expect(String(status.stdout)).toMatch(new RegExp(`^b +running +- +missing +${NOT_STARTED_DETAIL.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    expect(String(status.stdout)).toMatch(/^a +running +- +missing *$/m);
    expect(workerStarts(b.logDir)).toEqual({ a: 1 });

    const handedOverAt = Date.parse(ledger(dir).find((l) => l.id === 'b' && l.status === 'running')!.started_at!);
    const gateOpenedAt = Date.now();
    openGate(b, 'a');
    const ended = await run;
    expect(ended.exitCode, String(ended.stderr)).toBe(0);
    expect(latestStatus(dir)).toEqual({ a: 'done', b: 'done' });
    expect(workerStarts(b.logDir)).toEqual({ a: 1, b: 1 });
    // Its started_at says when it started, once the slot freed, not when it was handed over.
    const startedAt = Date.parse(ledger(dir).findLast((l) => l.id === 'b')!.started_at!);
    expect(handedOverAt).toBeLessThan(gateOpenedAt);
    expect(startedAt).toBeGreaterThanOrEqual(gateOpenedAt);
  }, 60_000);

  it('--halt and --no-quota-wait hand over none ahead: the next unit stays queued while the slot is taken', async () => {
    for (const args of [['--halt', 'soon,fail=1'], ['--no-quota-wait']]) {
      const { b, dir, run } = startAhead(args);
      await waitFor(() => existsSync(dir) && handedOver(dir, 'a') && workerStarts(b.logDir).a === 1, "a's worker at its gate");
      // The driver hands over every unit it starts in one pass (a and, ahead, b: the waiting
      // test above), so once a's worker runs, b would already be `running` were it ahead.
      expect(latestStatus(dir).b, args.join(' ')).toBe('queued');
      openGate(b, 'a');
      expect((await run).exitCode).toBe(0);
      b.cleanup();
      box = undefined;
    }
  }, 60_000);

  it('prun cancel withdraws it unstarted: cancelled before it ran, no worker, the running unit goes on', async () => {
    const { b, dir, run } = startAhead(['--json']);
    await bWaiting(b, dir);
    const cancel = await prun(['cancel', 'fanout', 'b'], { env: b.env, cwd: b.root });
    expect(cancel.exitCode).toBe(0);
    expect(String(cancel.stdout)).toMatch(/^cancelled b: cancelled by prun cancel \(pid \d+\) before it ran$/);
    expect(readFileSync(join(dir, 'results', 'b.md'), 'utf8')).toMatch(/^# b result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; cancelled by prun cancel/);
    openGate(b, 'a');
    const ended = await run;
    // A cancelled unit counts against the batch, as any cancel does.
    expect(ended.exitCode).toBe(1);
    expect(latestStatus(dir)).toEqual({ a: 'done', b: 'cancelled' });
    expect(workerStarts(b.logDir)).toEqual({ a: 1 });
  }, 60_000);

  it('prun cancel stays a cancel when the supervisor dies before the stop reaches it', async () => {
    const { b, dir, run } = startAhead();
    await bWaiting(b, dir);
    const host = ledger(dir).findLast((l) => l.id === 'a' && l.status === 'running')!.dispatcher_pid!;
    // Frozen, the supervisor cannot read the stop request; then it dies with it unread.
    process.kill(host, 'SIGSTOP');
    const cancel = prun(['cancel', 'fanout', 'b'], { env: b.env, cwd: b.root });
    await waitFor(() => ledger(dir).some((l) => l.id === 'b' && (l as { stop_reason?: string }).stop_reason === 'cancel'), 'the cancel recorded');
    process.kill(host, 'SIGKILL');
    expect(String((await cancel).stdout)).toMatch(/^cancelled b: cancelled by prun cancel \(pid \d+\) before it ran$/);
    await run.catch(() => undefined);
    expect(latestStatus(dir).b).toBe('cancelled');
    expect(workerStarts(b.logDir).b).toBeUndefined();
  }, 60_000);

  it('Ctrl-C (SIGINT) queues it again unstarted, with no result; --resume runs it once', async () => {
    const { b, dir, run } = startAhead();
    await bWaiting(b, dir);
    run.kill('SIGINT');
    const ended = await run;
    expect(ended.exitCode).toBe(130);
    expect(latestStatus(dir)).toEqual({ a: 'interrupted', b: 'queued' });
    expect(ledger(dir).findLast((l) => l.id === 'b')!.note).toBe('stopped (SIGINT) before it started; queued again');
    expect(existsSync(join(dir, 'results', 'b.md'))).toBe(false);
    expect(workerStarts(b.logDir)).toEqual({ a: 1 });

    openGate(b, 'a');
    const resumed = await prun(['batch', '--resume', 'fanout'], { env: b.env, cwd: b.root });
    expect(resumed.exitCode, String(resumed.stderr)).toBe(0);
    expect(latestStatus(dir)).toEqual({ a: 'done', b: 'done' });
    expect(workerStarts(b.logDir).b).toBe(1);
  }, 60_000);

  it('kill -9 of the driver: the drained supervisor never starts it; --resume adopts a and runs b once', async () => {
    const { b, dir, run } = startAhead();
    await bWaiting(b, dir);
    run.kill('SIGKILL');
    await run.catch(() => undefined);
    const host = ledger(dir).findLast((l) => l.id === 'a' && l.status === 'running')!.dispatcher_pid!;
    await waitFor(() => readdirNames(join(dir, 'supervisors')).some((name) => name.startsWith(`${host}-`) && existsSync(join(dir, 'supervisors', name, 'drained'))), 'the supervisor to drain');
    // The slot frees while no driver watches: the waiting unit is not started.
    openGate(b, 'a');
    await waitFor(() => !processesUnder(join(b.root, 'tmp')).length, "a's worker to end");
    expect(workerStarts(b.logDir)).toEqual({ a: 1 });

    const resumed = await prun(['batch', '--resume', 'fanout'], { env: b.env, cwd: b.root });
    expect(resumed.exitCode, String(resumed.stderr)).toBe(0);
    expect(latestStatus(dir)).toEqual({ a: 'done', b: 'done' });
    expect(workerStarts(b.logDir)).toEqual({ a: 1, b: 1 });
    expect(ledger(dir).findLast((l) => l.id === 'b' && l.status === 'running')!.dispatcher_pid).not.toBe(host);
  }, 60_000);
});

function readdirNames(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
