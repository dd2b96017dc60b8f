// The batch's supervisor (one process hosting every running unit) under the faults #10 and #12
// name: the driver kill -9'd, the supervisor kill -9'd, both; then --resume. Counted from fake
// agy's start log (no worker started twice) and from the process table (nothing orphaned).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hostedState, supervisorAlive } from '../src/supervise/alive.js';
import { supervisorPaths, writeHostedRecord } from '../src/supervise/records.js';
import { processStartTime } from '../src/units.js';
import { handedOver, latestStatus, ledger, openGate, prun, sandbox, waitFor, workerStarts, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  box?.cleanup();
  box = undefined;
});

const unit = (id: string, extra: Record<string, unknown> = {}, markers = ''): Record<string, unknown> => ({
  id,
  prompt: `UNIT-ID:${id} do the work ${markers}`,
  model: 'fake-model-x',
  ...extra,
});

interface Line {
  id: string;
  status: string;
  attempt?: number;
  note?: string;
  dispatcher_pid?: number;
  dispatcher_start?: string;
  supervised?: boolean;
}
const lines = (dir: string): Line[] => ledger(dir) as unknown as Line[];

function scratch(units: unknown[]): { box: Sandbox; work: string; dir: string } {
  box = sandbox();
  const work = join(box.root, 'work');
  mkdirSync(work);
  writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
  return { box, work, dir: join(work, 'fanout') };
}

/** Pids of the processes whose working directory is inside `dir`, or whose command line names it. */
function processesOf(dir: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((name) => {
      try {
        if (readlinkSync(`/proc/${name}/cwd`).startsWith(`${dir}/`)) return true;
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The supervisor a unit's latest `running` line names. */
function supervisorOfUnit(dir: string, id: string): { pid: number; start: string } {
  const line = lines(dir).findLast((l) => l.id === id && l.status === 'running')!;
  expect(line.supervised, `${id} is hosted`).toBe(true);
  return { pid: line.dispatcher_pid!, start: line.dispatcher_start! };
}

describe('the batch supervisor', () => {
  it('outlives a kill -9 of the driver with every running unit; --resume adopts them, a new supervisor takes the next units, the old one drains away', async () => {
    const { box, work, dir } = scratch([
      unit('a', {}, '[[gate go]]'),
      unit('b', {}, '[[gate go]]'),
      unit('c', {}, '[[gate go]]'),
      unit('after', { depends_on: ['a', 'b', 'c'] }),
    ]);
    const first = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '3'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && ['a', 'b', 'c'].every((id) => handedOver(dir, id)) && Object.keys(workerStarts(box.logDir)).length === 3, 'three units running');
    const host = supervisorOfUnit(dir, 'a');
    // One process hosts all three: the same supervisor in every unit's line.
    expect(supervisorOfUnit(dir, 'b')).toEqual(host);
    expect(supervisorOfUnit(dir, 'c')).toEqual(host);
    first.kill('SIGKILL');
    await first;

    // The driver is gone; the supervisor, and the units in it, are not.
    await waitFor(() => existsSync(supervisorPaths(dir, host).drained), 'the supervisor to see its driver gone');
    expect(supervisorAlive(host)).toBe(true);
    const status = await prun(['status', 'fanout'], { env: box.env, cwd: work });
    expect(String(status.stdout)).toMatch(/^a +running +/m);
    expect(String(status.stdout)).not.toContain('dispatcher gone');

    const resuming = prun(['batch', '--resume', 'fanout', '--json'], { env: box.env, cwd: work });
    await waitFor(() => lines(dir).filter((l) => (l.note ?? '').startsWith('adopted a dispatch still running')).length === 3, 'three adoptions');
    openGate(box, 'go');
    const resumed = await resuming;
    expect(resumed.exitCode, String(resumed.stderr)).toBe(0);
    expect(latestStatus(dir)).toEqual({ a: 'done', b: 'done', c: 'done', after: 'done' });
    expect(workerStarts(box.logDir)).toEqual({ a: 1, b: 1, c: 1, after: 1 });
    // The dependent ran in the resumed driver's own supervisor, not in the drained one.
    const next = lines(dir).find((l) => l.id === 'after' && l.status === 'running')!;
    expect(next.dispatcher_pid).not.toBe(host.pid);
    // Nothing is left: no supervisor, no worker, and no supervisor folder.
    await waitFor(() => processesOf(dir).length === 0, 'no process of the batch left', 10_000);
    expect(supervisorAlive(host)).toBe(false);
    expect(existsSync(join(dir, 'supervisors'))).toBe(false);
  }, 90_000);

  it('kill -9 of the supervisor takes its workers with it (no orphan); the watching driver records them failed and runs the next units in a new supervisor', async () => {
    const { box, work, dir } = scratch([unit('s1', {}, '[[agy HANG=1]]'), unit('s2', {}, '[[agy HANG=1]]'), unit('later', { depends_on: [] })]);
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && handedOver(dir, 's1') && handedOver(dir, 's2') && Object.keys(workerStarts(box.logDir)).length === 2, 'two hanging workers');
    const host = supervisorOfUnit(dir, 's1');
    const workers = join(box.root, 'tmp');
    expect(processesOf(workers).length).toBeGreaterThan(0);
    process.kill(host.pid, 'SIGKILL');
    // The kernel's parent-death signal and the PID namespace end every worker at once.
    await waitFor(() => processesOf(workers).length === 0, 'the workers to die with their supervisor', 5_000);
    const ended = await run;
    expect(ended.exitCode).toBe(2);
    expect(latestStatus(dir)).toEqual({ s1: 'failed', s2: 'failed', later: 'done' });
    for (const id of ['s1', 's2']) expect(lines(dir).findLast((l) => l.id === id)!.note).toBe(`the batch's supervisor (pid ${host.pid}) died of SIGKILL before this unit published a result`);
    // `later` waited in the dead supervisor for a worker slot: queued again, not failed, it ran
    // in the new one.
    expect(lines(dir).find((l) => l.id === 'later' && l.status === 'queued' && l.note !== undefined)!.note).toBe(
      `the batch's supervisor (pid ${host.pid}) died of SIGKILL before starting it; queued again`,
    );
    const later = lines(dir).findLast((l) => l.id === 'later' && l.status === 'running')!;
    expect(later.dispatcher_pid).not.toBe(host.pid);
    expect(workerStarts(box.logDir)).toEqual({ s1: 1, s2: 1, later: 1 });
    await waitFor(() => processesOf(dir).length === 0, 'no process of the batch left', 10_000);
  }, 90_000);

  it('kill -9 of the driver and then the supervisor: --resume runs each killed unit once more, only after its first worker is gone', async () => {
    const ids = ['k1', 'k2', 'k3'];
    const { box, work, dir } = scratch(ids.map((id) => unit(id, {}, '[[gate go]]')));
    const first = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '3'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && ids.every((id) => handedOver(dir, id)) && Object.keys(workerStarts(box.logDir)).length === 3, 'three units running');
    const host = supervisorOfUnit(dir, 'k1');
    first.kill('SIGKILL');
    await first;
    process.kill(host.pid, 'SIGKILL');
    const workers = join(box.root, 'tmp');
    await waitFor(() => processesOf(workers).length === 0 && !supervisorAlive(host), 'the supervisor and its workers gone', 5_000);
    // Each `running` line names a dead supervisor, and no result was published.
    for (const id of ids) expect(hostedState(dir, host, id, 1)).toEqual({ kind: 'gone' });
    openGate(box, 'go');
    const resumed = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work });
    expect(resumed.exitCode, String(resumed.stderr)).toBe(0);
    expect(latestStatus(dir)).toEqual({ k1: 'done', k2: 'done', k3: 'done' });
    // The killed attempt and the one that finished: never two at once, never a third.
    expect(workerStarts(box.logDir)).toEqual({ k1: 2, k2: 2, k3: 2 });
    for (const id of ids) expect(lines(dir).filter((l) => l.id === id).map((l) => l.note ?? '')).toContain('previous dispatch ended without a result; dispatching again');
    await waitFor(() => processesOf(dir).length === 0, 'no process of the batch left', 10_000);
  }, 90_000);
});

/**
 * The supervisor's live children: with the preflight off, the launch chains of its units and its
 * spare (each chain's leader is the perl launcher, which execs unshare, and stays its child; setpriv first where the plan uses it).
 */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number).filter((child) => running(child));
  } catch {
    return [];
  }
}

/** The supervisor's chain forker (the dispatcher's forker.ts): its perl child running `zserve`. */
function forkerOf(supervisor: number): number | null {
  return (
    childrenOf(supervisor).find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('zserve()');
      } catch {
        return false;
      }
    }) ?? null
  );
}

/** The supervisor's launch chains: those it spawned, and those its chain forker forked. */
function chainsOf(supervisor: number): number[] {
  const forker = forkerOf(supervisor);
  return [...childrenOf(supervisor).filter((pid) => pid !== forker), ...(forker === null ? [] : childrenOf(forker))];
}

const running = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z /s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe("the supervisor's spare chain (the next unit's, parked while units run)", () => {
  const isolated = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'true']).status === 0;
  const why = isolated ? '' : ' (skipped: no PID namespace here)';

  it.skipIf(!isolated)(`is killed once the driver has gone, while the units it hosts run on${why}`, async () => {
    const { box, work, dir } = scratch([unit('p1', {}, '[[gate go]]'), unit('p2', {}, '[[gate go]]'), unit('p3')]);
    const env = { ...box.env, PRUN_ISOLATE: 'pid' };
    const first = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env, cwd: work });
    await waitFor(() => existsSync(dir) && handedOver(dir, 'p1') && handedOver(dir, 'p2') && Object.keys(workerStarts(box.logDir)).length === 2, 'two units running');
    const host = supervisorOfUnit(dir, 'p1');
    // Two units alike run: their two chains, and the spare parked for the next one.
    await waitFor(() => chainsOf(host.pid).length === 3, 'two running chains and a spare');
    first.kill('SIGKILL');
    await first;
    // Drained, it takes no unit: the spare goes at once, the two running units stay.
    const drained = supervisorPaths(dir, host).drained;
    await waitFor(() => existsSync(drained) && chainsOf(host.pid).length === 2, 'the spare killed at the drain');
    openGate(box, 'go');
    await waitFor(() => !supervisorAlive(host), 'the supervisor to end with its last unit');
    expect(workerStarts(box.logDir)).toEqual({ p1: 1, p2: 1 });
  }, 90_000);

  it.skipIf(!isolated)(`dies with a kill -9 of the supervisor, as the running units' chains do${why}`, async () => {
    const { box, work, dir } = scratch([unit('h1', {}, '[[agy HANG=1]]'), unit('h2', {}, '[[agy HANG=1]]')]);
    const env = { ...box.env, PRUN_ISOLATE: 'pid' };
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env, cwd: work, reject: false });
    await waitFor(() => existsSync(dir) && handedOver(dir, 'h1') && handedOver(dir, 'h2') && Object.keys(workerStarts(box.logDir)).length === 2, 'two hanging workers');
    const host = supervisorOfUnit(dir, 'h1');
    await waitFor(() => chainsOf(host.pid).length === 3, 'two running chains and a spare');
    const chains = chainsOf(host.pid);
    const forker = forkerOf(host.pid);
    process.kill(host.pid, 'SIGKILL');
    await waitFor(() => chains.every((pid) => !running(pid)), 'every chain, the spare too, to die with the supervisor', 5_000);
    // The chain forker, when the chains came from it, dies with the supervisor too.
    await waitFor(() => forker === null || !running(forker), 'the chain forker to die with the supervisor', 5_000);
    expect((await run).exitCode).toBe(2);
  }, 90_000);
});

describe("a hosted unit's state, from its supervisor's files", () => {
  it('is running while recorded running or not yet drained, ended with its exit code, gone once its supervisor is dead or drained without it', async () => {
    box = sandbox();
    const dir = join(box.root, 'batch');
    // A live process standing in for a supervisor: its pid and start time name it.
    const stand = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    started.push(stand);
    await new Promise((resolveSpawn) => stand.once('spawn', resolveSpawn));
    const who = { pid: stand.pid!, start: processStartTime(stand.pid!)! };
    const paths = supervisorPaths(dir, who);
    mkdirSync(paths.units, { recursive: true });

    // Handed over, not yet recorded, not drained: running, not started yet (the supervisor will start it).
    expect(hostedState(dir, who, 'u', 2)).toEqual({ kind: 'running', started: false });
    writeHostedRecord(paths.unit('u'), { id: 'u', attempt: 2, state: 'running', exit_code: null });
    expect(hostedState(dir, who, 'u', 2)).toEqual({ kind: 'running', started: true });
    // A record of an earlier attempt is not this attempt's.
    writeHostedRecord(paths.unit('v'), { id: 'v', attempt: 1, state: 'ended', exit_code: 0 });
    expect(hostedState(dir, who, 'v', 2)).toEqual({ kind: 'running', started: false });
    writeFileSync(paths.drained, 'now\n');
    // Drained without a record of attempt 2: never handed over.
    expect(hostedState(dir, who, 'v', 2)).toEqual({ kind: 'gone' });
    expect(hostedState(dir, who, 'u', 2)).toEqual({ kind: 'running', started: true });
    writeHostedRecord(paths.unit('u'), { id: 'u', attempt: 2, state: 'ended', exit_code: 75 });
    expect(hostedState(dir, who, 'u', 2)).toEqual({ kind: 'ended', exitCode: 75 });
    // A reused pid is not the supervisor: a later start time names another process.
    expect(hostedState(dir, { pid: who.pid, start: String(Number(who.start) + 1) }, 'w', 1)).toEqual({ kind: 'gone' });

    stand.kill('SIGKILL');
    await new Promise((resolveExit) => stand.once('exit', resolveExit));
    writeHostedRecord(paths.unit('w'), { id: 'w', attempt: 1, state: 'running', exit_code: null });
    // Its supervisor died with it: gone. An ended record still tells the end.
    expect(hostedState(dir, who, 'w', 1)).toEqual({ kind: 'gone' });
    expect(hostedState(dir, who, 'u', 2)).toEqual({ kind: 'ended', exitCode: 75 });
  });
});
