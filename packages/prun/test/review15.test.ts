// review15's findings in the batch supervision (issue #15): nothing a dispatch starts outlives
// its host, and a unit whose supervisor died says so, not what its log's last line happened to be.
import { spawn } from 'node:child_process';
import { execa } from 'execa';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchReasonLine, isRunning } from '../src/units.js';
import { hardOpenFilesLimit, openFilesProblem } from '../src/supervise/limits.js';
import { supervisorPaths } from '../src/supervise/records.js';
import { agyCalls, handedOver, latestStatus, ledger, openGate, planUnit, prun, prunBin, repoRoot, sandbox, waitFor, workerStarts, writePlan, type Sandbox } from './helpers.js';

const DISPATCHER = join(repoRoot, 'packages/dispatcher-agy/bin/prun-dispatch-agy.js');
/** fake agy itself, not the by-prompt fixture: the `/usage` query is then one process, the one a refresh starts. */
const FAKE_AGY = join(repoRoot, 'tools/fake-agy/fake-agy');

// Whatever a failed test leaves running works in its sandbox, which cleanup() clears.
let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

interface Line {
  id: string;
  status: string;
  note?: string;
  exit_code?: number | null;
  dispatcher_pid?: number;
  supervised?: boolean;
}
const lines = (dir: string): Line[] => ledger(dir) as unknown as Line[];

/** The pids of fake agy's `/usage` queries so far. */
const usageQueries = (logDir: string): number[] => agyCalls(logDir).filter((call) => call.kind === 'usage').map((call) => call.pid);

/**
 * A sandbox whose dispatches route through the quota gate with no snapshot yet (the managed one
 * under its HOME), so each starts a `/usage` refresh, and that query hangs until killed.
 */
function refreshingBox(): Sandbox {
  const made = sandbox({ ANTIGRAVITY_BIN: FAKE_AGY, PRUN_AGY_QUOTA_GATE: undefined, FAKE_AGY_USAGE_HANG: '1' });
  delete made.env.PRUN_AGY_QUOTA_GATE;
  return made;
}

/** A model in the Gemini quota group: routing it needs the snapshot. */
const GATED_MODEL = 'gemini-3.8-flash-high';

describe('a quota refresh dies with its host (review15)', () => {
  it('kill -9 of the driver and the supervisor while a /usage refresh runs leaves no query running', async () => {
    box = refreshingBox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writePlan(work, [{ id: 'q1', prompt: 'do the work', model: GATED_MODEL }]);
    const dir = join(work, 'fanout');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && handedOver(dir, 'q1') && usageQueries(box!.logDir).length === 1, 'the unit\'s /usage refresh to start');
    const [query] = usageQueries(box.logDir);
    const host = lines(dir).findLast((l) => l.id === 'q1' && l.status === 'running')!.dispatcher_pid!;
    run.kill('SIGKILL');
    await run;
    process.kill(host, 'SIGKILL');
    // Before the fix the query ran on, reparented to init, until agy's own --print-timeout.
    await waitFor(() => !isRunning(query!), 'the /usage query to die with the supervisor', 10_000);
  }, 60_000);

  it('kill -9 of prun-dispatch-agy run directly while its /usage refresh runs leaves no query running', async () => {
    box = refreshingBox();
    writeFileSync(join(box.root, 'prompt.md'), 'do the work\n');
    const dispatcher = spawn(
      process.execPath,
      [DISPATCHER, `--prompt-file=${join(box.root, 'prompt.md')}`, `--result-file=${join(box.root, 'result.md')}`, '--unit-id=direct'],
      { env: { ...box.env, ANTIGRAVITY_DISPATCH_MODEL: GATED_MODEL }, cwd: box.root, stdio: 'ignore' },
    );
    await waitFor(() => usageQueries(box!.logDir).length === 1, 'the dispatcher\'s /usage refresh to start');
    const [query] = usageQueries(box.logDir);
    const gone = new Promise((resolve) => dispatcher.once('exit', resolve));
    dispatcher.kill('SIGKILL');
    await gone;
    await waitFor(() => !isRunning(query!), 'the /usage query to die with the dispatcher', 10_000);
    expect(workerStarts(box.logDir)).toEqual({});
  }, 60_000);
});

describe('a unit whose supervisor died says so (review15)', () => {
  it('kill -9 of the supervisor with the driver alive: the note, the FALLBACK and one stderr line name the supervisor, its pid and SIGKILL, not the unit\'s last log line', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    const units = ['h1', 'h2'].map((id) => ({ id, prompt: `UNIT-ID:${id} do the work [[agy HANG=1]]`, model: 'fake-model-x' }));
    writePlan(work, [...units, { id: 'next', prompt: 'UNIT-ID:next do the work', model: 'fake-model-x', depends_on: [] }]);
    const dir = join(work, 'fanout');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && handedOver(dir, 'h1') && handedOver(dir, 'h2') && Object.keys(workerStarts(box!.logDir)).length === 2, 'two hanging workers');
    // What a unit's log may last say (a routing line, as a gated model's does): no reason for its
    // end, yet the line the note used to quote.
    for (const id of ['h1', 'h2']) writeFileSync(join(dir, 'logs', `${id}.stderr`), 'dispatch-task-agy: MODEL-FALLBACK from=a to=b reason=template-unlisted\n', { flag: 'a' });
    const host = lines(dir).findLast((l) => l.id === 'h1' && l.status === 'running')!.dispatcher_pid!;
    process.kill(host, 'SIGKILL');
    const ended = await run;
    expect(ended.exitCode).toBe(2);
    const died = `the batch's supervisor (pid ${host}) died of SIGKILL`;
    for (const id of ['h1', 'h2']) {
      const last = lines(dir).findLast((l) => l.id === id)!;
      expect(last).toMatchObject({ status: 'failed', exit_code: 137, note: `${died} before this unit published a result` });
      // The unit's result says the same, so a coordinator reading results/ learns it too.
      const result = readFileSync(join(dir, 'results', `${id}.md`), 'utf8');
      expect(result).toContain('FALLBACK');
      expect(result).toContain(died);
      expect(String(ended.stderr)).toContain(`prun: unit ${id} failed (exit 137): ${died} before this unit published a result`);
    }
    // One line for the supervisor itself, naming what it took with it.
    const supervisorLines = String(ended.stderr).split('\n').filter((line) => line.startsWith(`prun: ${died}`));
    // `next` was handed over too, waiting there for a worker slot: it never started, so it is
    // not among the units lost, and runs again.
    expect(supervisorLines).toEqual([`prun: ${died}, taking 2 running unit(s) with it: h1, h2; not started there, queued again: next`]);
    expect(String(ended.stderr)).not.toContain('MODEL-FALLBACK');
    expect(lines(dir).find((l) => l.id === 'next' && l.status === 'queued' && l.note !== undefined)!.note).toBe(`${died} before starting it; queued again`);
    // The next unit ran in a new supervisor, once.
    expect(lines(dir).findLast((l) => l.id === 'next')!.status).toBe('done');
    expect(lines(dir).findLast((l) => l.id === 'next' && l.status === 'running')!.dispatcher_pid).not.toBe(host);
    expect(workerStarts(box.logDir).next).toBe(1);
  }, 60_000);
});

describe('prun status of a unit that ended while no driver watched (review15)', () => {
  it('shows running(ended) with its exit code and what settles it, not running(dispatcher gone)', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writePlan(work, [planUnit('u1', '[[gate one]]'), planUnit('u2', '[[gate two]]')]);
    const dir = join(work, 'fanout');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && handedOver(dir, 'u1') && handedOver(dir, 'u2') && Object.keys(workerStarts(box!.logDir)).length === 2, 'two units running');
    const line = lines(dir).findLast((l) => l.id === 'u1' && l.status === 'running')! as Line & { dispatcher_start: string };
    run.kill('SIGKILL');
    await run;
    // u1 ends in the supervisor, which lives on for u2.
    openGate(box, 'one');
    const record = supervisorPaths(dir, { pid: line.dispatcher_pid!, start: line.dispatcher_start }).unit('u1');
    await waitFor(() => existsSync(record) && readFileSync(record, 'utf8').includes('"ended"'), "u1's dispatch to end in its supervisor");
    const status = await prun(['status', 'fanout'], { env: box.env, cwd: work });
    expect(String(status.stdout)).toMatch(/^u1 +running\(ended\) +- +present +ended \(exit 0\) while no driver watched; prun batch --resume settles it$/m);
    expect(String(status.stdout)).toMatch(/^u2 +running +- +missing/m);
    expect(String(status.stdout)).not.toContain('dispatcher gone');
    // --json is unchanged: the unit is still `running` in the ledger, its dispatcher not alive.
    const json = JSON.parse(String((await prun(['status', 'fanout', '--json'], { env: box.env, cwd: work })).stdout)) as { units: Array<Record<string, unknown>> };
    expect(json.units.find((u) => u.id === 'u1')).toMatchObject({ status: 'running', dispatcher_alive: false, result: 'present' });
    expect(Object.keys(json.units.find((u) => u.id === 'u1')!)).toEqual(Object.keys(json.units.find((u) => u.id === 'u2')!));
    openGate(box, 'two');
  }, 60_000);
});

describe('--jobs within the open-file limit (review15)', () => {
  it('reads the hard limit from /proc/self/limits and needs nothing beyond the units that can run', () => {
    const limits = (soft: string, hard: string) => `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}                  ${hard}                  files\n`;
    expect(hardOpenFilesLimit(limits('1024', '4096'))).toBe(4096);
    expect(hardOpenFilesLimit(limits('unlimited', 'unlimited'))).toBeNull();
    expect(hardOpenFilesLimit(null)).toBeNull();
    expect(openFilesProblem(50, 3, 200)).toBeNull();
    // With more units than --jobs, the unit handed over ahead counts too: 13 + 1 fit in 200.
    expect(openFilesProblem(13, 100, 200)).toBeNull();
    expect(openFilesProblem(14, 100, 200)).toBe(
      "--jobs 14: 14 units running at once and the one handed over ahead need about 212 open files in the batch's supervisor, but this process may open only 200 (ulimit -n); use --jobs 13 or fewer, or raise the limit",
    );
    // No unit waits when the plan has no more units than --jobs.
    expect(openFilesProblem(14, 14, 200)).toBeNull();
    expect(openFilesProblem(4, 100, 40)).toMatch(/; raise the limit$/);
    expect(openFilesProblem(10_000, 10_000, null)).toBeNull();
  });

  /** prun under `ulimit -n LIMIT` (soft and hard), as a user's shell would start it. */
  const prunUnderLimit = (limit: number, args: string[], work: string) =>
    execa('sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, prunBin, ...args], { env: box!.env, cwd: work, reject: false, extendEnv: false });

  it('refuses, before making the batch directory, a --jobs whose running units one supervisor could not hold; a smaller batch under the same limit runs', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writePlan(work, Array.from({ length: 50 }, (_, i) => planUnit(`u${i}`)));
    const refused = await prunUnderLimit(200, ['batch', 'plan.json', '--dir', 'fanout', '--jobs', '50'], work);
    expect(refused.exitCode).toBe(2);
    expect(String(refused.stderr)).toBe(
      "prun: --jobs 50: 50 units running at once need about 632 open files in the batch's supervisor, but this process may open only 200 (ulimit -n); use --jobs 13 or fewer, or raise the limit",
    );
    expect(existsSync(join(work, 'fanout'))).toBe(false);
    expect(workerStarts(box.logDir)).toEqual({});
    // --jobs beyond the plan's units costs nothing: three units under the same limit run.
    writePlan(work, ['a', 'b', 'c'].map((id) => planUnit(id)), 'small.json');
    const small = await prunUnderLimit(200, ['batch', 'small.json', '--dir', 'small', '--jobs', '50'], work);
    expect(small.exitCode, String(small.stderr)).toBe(0);
    expect(latestStatus(join(work, 'small'))).toEqual({ a: 'done', b: 'done', c: 'done' });
  }, 60_000);
});


describe('the note of a unit that published no result quotes why its dispatcher ended (review15b)', () => {
  const prefix = 'dispatch-task-agy: ';
  const routing = 'MODEL-FALLBACK from=claude-sonnet-5-5-high to=gemini-3.8-flash-high reason=template-unlisted';
  const echo = Array.from({ length: 80 }, (_, i) => `{"event": "step_update", "line": ${i}}`);

  it('picks the dispatcher\'s own last message, not the worker output it echoes after it', () => {
    const log = [`${prefix}${routing}`, `${prefix}could not write FALLBACK result to /r/a.md: ENOSPC: no space left on device`, `${prefix}Agy exited with code 3`, ...echo, ''].join('\n');
    expect(dispatchReasonLine(log, [routing])).toBe(`${prefix}Agy exited with code 3`);
  });

  it('skips the routing notes the dispatcher printed before the run (its quota-note lines)', () => {
    const log = [`${prefix}${routing}`, ...echo].join('\n');
    expect(dispatchReasonLine(log, [routing])).toBe(echo.at(-1));
    expect(dispatchReasonLine(log, [])).toBe(`${prefix}${routing}`);
  });

  it('falls back to the last line, and to null for an empty log', () => {
    expect(dispatchReasonLine('spawn setpriv EMFILE\n\n', [])).toBe('spawn setpriv EMFILE');
    expect(dispatchReasonLine('\n  \n', [])).toBeNull();
  });
});
