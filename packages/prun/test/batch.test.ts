import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { latestStatus, ledger, openGate, prun, repoRoot, sandbox, waitFor, workerCalls, writePlan, type Sandbox } from './helpers.js';

const dispatcherBin = join(repoRoot, 'packages/dispatcher-agy/bin/prun-dispatch-agy.js');
const fakeAgy = join(repoRoot, 'tools/fake-agy/fake-agy');

let box: Sandbox | undefined;

/** Pids of the processes whose working directory is inside `dir` (workers run in their state dir's work/). */
function processesWorkingIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readlinkSync(`/proc/${name}/cwd`).startsWith(`${dir}/`);
      } catch {
        return false;
      }
    })
    .map(Number);
}
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const unit = (id: string, extra: Record<string, unknown> = {}, markers = ''): Record<string, unknown> => ({
  id,
  prompt: `UNIT-ID:${id} do the work ${markers}`,
  model: 'fake-model-x', // outside both quota groups: never gated
  ...extra,
});

/** A snapshot in which only the Gemini group is reported, empty until `resetAt`. */
function geminiExhaustedUntil(path: string, resetAt: Date): void {
  const usage = {
    groups: [{ name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0, reset_time: resetAt.toISOString() }] }],
  };
  writeFileSync(path, JSON.stringify({ cached_at: Date.now() / 1000, usage }));
}

describe('prun batch', () => {
  it('runs a 12-unit plan with dependencies, a failing unit and a quota refusal that clears', async () => {
    box = sandbox();
    const quota = join(box.root, 'quota.json');
    // Exhausted with a reset the gate cannot read ("resets soon": it never arrives by the
    // clock), so the first attempt is refused however loaded the machine; once the refusal is in
    // the ledger the test gives the quota back, and the retry after --quota-wait runs.
    const usage = { groups: [{ name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0, reset_time: 'soon' }] }] };
    writeFileSync(quota, JSON.stringify({ cached_at: Date.now() / 1000, usage }));
    const env: NodeJS.ProcessEnv = { ...box.env, AGY_QUOTA_CACHE: quota };
    delete env.PRUN_AGY_QUOTA_GATE;
    const plan = writePlan(box.root, [
      { id: 'u07', prompt: 'UNIT-ID:u07 runs on the default Gemini model, refused until the reset' },
      unit('u01'),
      unit('u02', { depends_on: ['u01'] }),
      unit('u03', { depends_on: ['u01', 'u02'] }),
      unit('u04', {}, '[[agy EXIT=3]]'),
      unit('u05', { depends_on: ['u04'] }),
      unit('u06', { depends_on: ['u05'] }),
      unit('u08'),
      unit('u09', { depends_on: ['u07'] }),
      unit('u10'),
      unit('u11', { depends_on: ['u10'] }),
      unit('u12'),
    ]);
    const dir = join(box.root, 'batch');
    const running = prun(['batch', plan, '--dir', dir, '--jobs', '4', '--json', '--quota-wait', '1'], { env, cwd: box.root });
    await waitFor(() => existsSync(dir) && ledger(dir).some((l) => l.id === 'u07' && l.status === 'deferred'), 'the quota refusal');
    geminiExhaustedUntil(quota, new Date(Date.now() - 1000));
    writeFileSync(quota, readFileSync(quota, 'utf8').replace('"remaining_fraction":0', '"remaining_fraction":0.5'));
    const run = await running;

    // u04 failed, and u05 and u06 failed behind it without running.
    expect(run.exitCode).toBe(3);
    const summary = JSON.parse(String(run.stdout)) as { units: Array<{ id: string; status: string; fallback: boolean }>; exit_code: number };
    expect(summary.exit_code).toBe(3);
    const statuses = Object.fromEntries(summary.units.map((u) => [u.id, u.status]));
    expect(statuses).toEqual({
      u07: 'done', u01: 'done', u02: 'done', u03: 'done', u04: 'failed', u05: 'failed', u06: 'failed',
      u08: 'done', u09: 'done', u10: 'done', u11: 'done', u12: 'done',
    });
    expect(latestStatus(dir)).toEqual(statuses);

    const calls = workerCalls(box.logDir);
    const perUnit = (id: string) => calls.filter((call) => call.unit === id).length;
    for (const id of ['u01', 'u02', 'u03', 'u04', 'u07', 'u08', 'u09', 'u10', 'u11', 'u12']) expect(perUnit(id), id).toBe(1);
    expect(perUnit('u05')).toBe(0);
    expect(perUnit('u06')).toBe(0);

    // Dependencies ran first: a dependent's worker started after its dependency's last line.
    const lines = ledger(dir);
    const index = (id: string, status: string) => lines.findIndex((l) => l.id === id && l.status === status);
    expect(index('u02', 'running')).toBeGreaterThan(index('u01', 'done'));
    expect(index('u03', 'running')).toBeGreaterThan(index('u02', 'done'));
    expect(index('u09', 'running')).toBeGreaterThan(index('u07', 'done'));

    // The quota refusal was deferred until the named reset, then ran.
    const deferred = lines.find((l) => l.id === 'u07' && l.status === 'deferred');
    expect(deferred?.exit_code).toBe(75);
    expect(deferred?.note).toMatch(/^the Agy Gemini quota group is exhausted \(resets /);
    expect(Date.parse(deferred!.retry_at!)).toBeGreaterThan(Date.now() - 60_000);
    expect(lines.filter((l) => l.id === 'u07' && l.status === 'running').length).toBeGreaterThanOrEqual(2);
    // The refused attempt's FALLBACK was kept aside, and the unit's result is the real one.
    expect(readFileSync(join(dir, 'results', 'u07.attempt-1.md'), 'utf8')).toMatch(/^# u07 result \(FALLBACK, /);
    expect(readFileSync(join(dir, 'results', 'u07.md'), 'utf8')).toMatch(/^# u07 result\n/);

    // Every unit ends with a result or a FALLBACK; dependency failures say why.
    for (const id of Object.keys(statuses)) expect(existsSync(join(dir, 'results', `${id}.md`)), id).toBe(true);
    expect(readFileSync(join(dir, 'results', 'u05.md'), 'utf8')).toMatch(/^# u05 result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; dependency u04 failed\n/);
    expect(readFileSync(join(dir, 'results', 'u04.md'), 'utf8')).toMatch(/^# u04 result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; Agy exited with code 3\n/);

    // Every ledger line carries the full record.
    for (const line of lines) {
      expect(Object.keys(line)).toEqual(expect.arrayContaining(['id', 'status', 'model', 'mode', 'prompt_file', 'clone_dir', 'result_file', 'state_dir', 'started_at', 'ended_at', 'exit_code']));
    }
  }, 90_000);

  it('resumes after SIGKILL without running any unit twice', async () => {
    box = sandbox();
    const plan = writePlan(box.root, ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'].map((id) => unit(id, {}, '[[agy DELAY_MS=1200]]')));
    const dir = join(box.root, 'batch');
    const first = prun(['batch', plan, '--dir', dir, '--jobs', '2'], { env: box.env, cwd: box.root });
    // Two units done and the next two's workers started (so mid-flight at the kill, with 1.2 s to
    // go): killed between a `done` line and the next hand-over, nothing would be left to adopt.
    await waitFor(
      () => existsSync(join(dir, 'ledger.jsonl')) && ledger(dir).filter((l) => l.status === 'done').length >= 2 && workerCalls(box!.logDir).length >= 4,
      'two units done, two more started',
    );
    first.kill('SIGKILL');
    await first;

    const resumed = await prun(['batch', '--resume', dir, '--jobs', '2', '--json'], { env: box.env, cwd: box.root });
    expect(resumed.exitCode).toBe(0);
    // Units that were mid-flight at the kill were adopted or settled from their results, not re-run.
    expect(ledger(dir).some((l) => /adopted|settled after restart/.test(l.note ?? ''))).toBe(true);
    expect(Object.values(latestStatus(dir))).toEqual(['done', 'done', 'done', 'done', 'done', 'done']);
    const calls = workerCalls(box.logDir);
    for (const id of ['k1', 'k2', 'k3', 'k4', 'k5', 'k6']) {
      expect(calls.filter((call) => call.unit === id).length, id).toBe(1);
      expect(readFileSync(join(dir, 'results', `${id}.md`), 'utf8')).toMatch(new RegExp(`^# ${id} result\n`));
    }
  }, 90_000);

  it('retries failed units as follow-up turns with --retry-failed', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [unit('r1', {}, '[[agy EXIT=3]]'), unit('r2', { depends_on: ['r1'] }), unit('r3')]);
    const dir = join(box.root, 'batch');
    const first = await prun(['batch', plan, '--dir', dir], { env: box.env, cwd: box.root });
    expect(first.exitCode).toBe(2);
    expect(latestStatus(dir)).toEqual({ r1: 'failed', r2: 'failed', r3: 'done' });

    const retry = await prun(['batch', '--retry-failed', dir], { env: box.env, cwd: box.root });
    expect(retry.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ r1: 'done', r2: 'done', r3: 'done' });
    const r1Calls = workerCalls(box.logDir).filter((call) => call.unit === 'r1');
    expect(r1Calls).toHaveLength(2);
    expect(r1Calls[1]!.argv.join(' ')).toContain('--conversation conv-fixed-0001');
    expect(workerCalls(box.logDir).filter((call) => call.unit === 'r3')).toHaveLength(1);
    expect(readFileSync(join(dir, 'results', 'r1.attempt-1.md'), 'utf8')).toMatch(/^# r1 result \(FALLBACK, /);
    expect(readFileSync(join(dir, 'results', 'r1.md'), 'utf8')).toMatch(/^# r1 result\n/);
  }, 60_000);

  it('stops every unit on SIGTERM, records them interrupted, keeps the ledger consistent and exits 143', async () => {
    box = sandbox({ PRUN_AGY_KILL_GRACE_SECONDS: '60' });
    const pidFile = join(box.root, 'agy-pids');
    const env = { ...box.env, FAKE_AGY_PID_FILE: pidFile };
    const plan = writePlan(box.root, ['h1', 'h2', 'h3'].map((id) => unit(id, {}, '[[agy HANG=1]]')));
    const dir = join(box.root, 'batch');
    const run = prun(['batch', plan, '--dir', dir, '--jobs', '2'], { env, cwd: box.root });
    await waitFor(() => workerCalls(box!.logDir).length === 2 && ledger(dir).filter((l) => l.status === 'running' && l.state_dir).length >= 2, 'two hanging workers');
    expect(processesWorkingIn(box.root).length).toBeGreaterThan(0);
    run.kill('SIGTERM');
    const result = await run;
    expect(result.exitCode).toBe(143);
    const latest = latestStatus(dir);
    expect(latest).toEqual({ h1: 'interrupted', h2: 'interrupted', h3: 'queued' });
    for (const id of ['h1', 'h2']) {
      const last = ledger(dir).filter((l) => l.id === id).at(-1)!;
      expect(last.exit_code).toBe(143);
      expect(readFileSync(join(dir, 'results', `${id}.md`), 'utf8')).toMatch(/^# \w+ result \(FALLBACK, [^\n]*\nConclusion: INCOMPLETE; [^\n]*SIGTERM/);
    }
    const pids = readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
    expect(pids.length).toBeGreaterThanOrEqual(2);
    // The recorded pids may be local to the worker's own pid namespace: look for any process
    // still working inside this test's directories instead.
    await waitFor(() => processesWorkingIn(box!.root).length === 0, 'no worker left');
  }, 60_000);

  it('stops with 75 on a quota refusal under --no-quota-wait, and --resume finishes after the reset', async () => {
    box = sandbox();
    const quota = join(box.root, 'quota.json');
    // Exhausted with no reset time ("resets later"): the retry is due after --quota-wait.
    writeFileSync(quota, JSON.stringify({ cached_at: Date.now() / 1000, usage: { groups: [{ name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0 }] }] } }));
    const env: NodeJS.ProcessEnv = { ...box.env, AGY_QUOTA_CACHE: quota };
    delete env.PRUN_AGY_QUOTA_GATE;
    const plan = writePlan(box.root, [{ id: 'q1', prompt: 'UNIT-ID:q1 default model' }]);
    const dir = join(box.root, 'batch');
    const stopped = await prun(['batch', plan, '--dir', dir, '--no-quota-wait', '--quota-wait', '1'], { env, cwd: box.root });
    expect(stopped.exitCode).toBe(75);
    expect(String(stopped.stderr)).toContain('--no-quota-wait');
    expect(latestStatus(dir)).toEqual({ q1: 'deferred' });
    expect(workerCalls(box.logDir)).toHaveLength(0);

    // The quota comes back, and the deferral's time passes.
    geminiExhaustedUntil(quota, new Date(Date.now() - 1000));
    writeFileSync(quota, readFileSync(quota, 'utf8').replace('"remaining_fraction":0', '"remaining_fraction":0.5'));
    const retryAt = Date.parse(ledger(dir).at(-1)!.retry_at!);
    await waitFor(() => Date.now() > retryAt, 'the retry time', 10_000);
    const resumed = await prun(['batch', '--resume', dir], { env, cwd: box.root });
    expect(resumed.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ q1: 'done' });
  }, 60_000);

  it('reports a stalled unit through the monitor rules and records the deadline failure', async () => {
    box = sandbox({ PRUN_STALL_THRESHOLD: '1', ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '2', PRUN_AGY_KILL_GRACE_SECONDS: '1' });
    const plan = writePlan(box.root, [unit('st', {}, '[[agy HANG=1]]')]);
    const dir = join(box.root, 'batch');
    const run = await prun(['batch', plan, '--dir', dir, '--json'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(1);
    expect(String(run.stderr)).toMatch(/^prun: unit st stalled: no output for \d+s \(state dir .*prun-task-/m);
    const summary = JSON.parse(String(run.stdout)) as { units: Array<{ id: string; status: string; exit_code: number; stalled: boolean }> };
    expect(summary.units[0]).toMatchObject({ id: 'st', status: 'failed', exit_code: 124, stalled: true });
  }, 60_000);

  it('adopts a dispatcher started just before the batch died, before its pid reached the ledger', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [unit('w1', {}, '[[gate w1]]')]);
    const dir = join(box.root, 'batch');
    // Lay the batch out with a run whose worker (plain fake agy: no gate) fails, then take its FALLBACK away.
    const first = await prun(['batch', plan, '--dir', dir], { env: { ...box.env, ANTIGRAVITY_BIN: fakeAgy, FAKE_AGY_EXIT: '3' }, cwd: box.root });
    expect(first.exitCode).toBe(1);
    rmSync(join(dir, 'results', 'w1.md'));
    // What a batch killed between its pre-spawn `running` line and the pid line leaves behind:
    const last = ledger(dir).at(-1)!;
    writeFileSync(join(dir, 'ledger.jsonl'), `${JSON.stringify({ ...last, status: 'running', exit_code: null, ended_at: null, note: undefined })}\n`, { flag: 'a' });
    // The orphan's worker waits at its gate until the resumed batch has adopted it.
    const orphan = execa(process.execPath, [dispatcherBin, '--prompt-file', join(dir, 'prompts', 'w1.md'), '--result-file', join(dir, 'results', 'w1.md'), '--unit-id', 'w1'], {
      env: box.env, extendEnv: false, cwd: dir, detached: true, stdio: 'ignore',
    });
    await new Promise((resolveSpawn) => orphan.once('spawn', resolveSpawn));

    const resuming = prun(['batch', '--resume', dir, '--json'], { env: box.env, cwd: box.root });
    await waitFor(() => ledger(dir).some((l) => l.id === 'w1' && /adopted/.test(l.note ?? '')), 'the adoption');
    openGate(box, 'w1');
    const resumed = await resuming;
    await orphan;
    expect(resumed.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ w1: 'done' });
    expect(workerCalls(box.logDir)).toHaveLength(2);
  }, 60_000);
});
