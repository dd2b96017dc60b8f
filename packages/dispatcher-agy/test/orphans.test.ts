/**
 * No orphan, ever: SIGKILL the dispatcher at random moments while its worker runs with a
 * grandchild and a detached (setsid) great-grandchild; within 5 s no process of that unit may
 * remain. Processes are found in the process table by a marker only this trial's environment
 * carries (it passes the scrub and every descendant inherits it).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { atomicTempPath } from '@prun/kit/fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { planLaunch } from '../src/isolation.js';
import { readState, rootPool, waitFor } from './harness.js';

const pool = rootPool();
const leftovers = new Set<number>();
afterAll(() => {
  // A failed trial must not leave its processes running for the rest of the suite.
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  pool.cleanup();
});

const plan = planLaunch('auto', process.platform, process.getuid?.() === 0);
const noNamespace = plan.isolation.kind === 'pid' ? null : plan.isolation.reason;

/** The mode this machine runs by default gets the full count; the other one a smaller sample. */
const TRIALS = 50;
const SAMPLE = 15;
const PARALLEL = 5;

/** Pids of every process whose environment carries `marker` (readable: same user or root). */
function markedProcesses(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').includes(marker)) found.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

interface TrialOutcome {
  left: number[];
  detail: string;
}

/**
 * One trial. `delayMs` counts from the moment the whole tree runs (the pid file holds the
 * worker, grandchild and great-grandchild), or from the spawn when `early` (a kill during
 * preflight, the launch chain's start, anything).
 */
async function trial(isolate: string, delayMs: number, early: boolean): Promise<TrialOutcome> {
  const root = pool.root();
  const marker = `PRUN_FAULT_MARKER_${randomUUID().replaceAll('-', '')}`;
  const pidFile = join(root.dir, 'pids');
  let dispatcherPid = 0;
  const running = root.run({
    env: {
      PRUN_ISOLATE: isolate,
      PRUN_FAULT_MARKER: marker,
      FAKE_AGY_HANG: '1',
      FAKE_AGY_SPAWN_GRANDCHILD: '1',
      FAKE_AGY_SPAWN_DETACHED: '1',
      FAKE_AGY_PID_FILE: pidFile,
    },
    onSpawn: (pid) => {
      dispatcherPid = pid;
    },
  });
  const pidCount = (): number => (existsSync(pidFile) ? readFileSync(pidFile, 'utf8').split('\n').filter((l) => l !== '').length : 0);
  if (!early) await waitFor(() => pidCount() >= 3 && markedProcesses(marker).length >= 3, 15_000, 'worker tree');
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  process.kill(dispatcherPid, 'SIGKILL');
  const result = await running;
  let left: number[] = [];
  try {
    await waitFor(() => markedProcesses(marker).length === 0, 5_000, 'no process of the unit left');
  } catch {
    left = markedProcesses(marker);
    for (const pid of left) leftovers.add(pid);
  }
  const stateDirs = root.stateDirs();
  let detail = `${early ? 'early ' : ''}${delayMs.toFixed(0)} ms, state dirs ${stateDirs.length}, signal ${result.signal}`;
  if (stateDirs.length === 1) {
    // What prun-monitor and prun batch read: a dead dispatch-pid and no result, i.e.
    // failed(dispatch-dead).
    const stateDir = join(root.dir, stateDirs[0]!);
    expect(readState(stateDir, 'dispatch-pid')).toBe(`${dispatcherPid}\n`);
    detail += existsSync(root.result) ? ', result present' : '';
  }
  expect(existsSync(root.result)).toBe(false);
  return { left, detail };
}

async function trials(isolate: string, count: number): Promise<string[]> {
  const plans = Array.from({ length: count }, (_, i) => ({ early: i % 5 === 0, delayMs: Math.random() * (i % 5 === 0 ? 400 : 150) }));
  const failures: string[] = [];
  for (let i = 0; i < plans.length; i += PARALLEL) {
    const outcomes = await Promise.all(plans.slice(i, i + PARALLEL).map((p) => trial(isolate, p.delayMs, p.early)));
    for (const o of outcomes) if (o.left.length > 0) failures.push(`${o.detail}: left ${o.left.join(' ')}`);
  }
  return failures;
}

describe('SIGKILL of the dispatcher', () => {
  test.skipIf(noNamespace !== null)(
    `leaves no process of the unit within 5 s (${TRIALS} random trials, isolated worker)${noNamespace ? ` (skipped: ${noNamespace})` : ''}`,
    async () => {
      expect(await trials('pid', TRIALS)).toEqual([]);
    },
    180_000,
  );

  test(
    `leaves no process of the unit within 5 s (${noNamespace === null ? SAMPLE : TRIALS} random trials, PRUN_ISOLATE=off: the keeper)`,
    async () => {
      expect(await trials('off', noNamespace === null ? SAMPLE : TRIALS)).toEqual([]);
    },
    180_000,
  );
});

describe('temp files', () => {
  test('the next run removes the publication temp a killed dispatcher left, never a live one', async () => {
    const root = pool.root();
    // A temp of a dispatcher that died mid-publication (its pid names no process), and one of
    // a live writer (this test process).
    const deadTemp = atomicTempPath(root.result, { tag: 'dispatch-task-agy', nonce: 'dead0000' }).replace(`-${process.pid}-`, '-999999999-');
    const liveTemp = atomicTempPath(join(dirname(root.result), 'other.md'), { tag: 'dispatch-task-agy', nonce: 'live0000' });
    writeFileSync(deadTemp, 'partial');
    writeFileSync(liveTemp, 'in progress');
    const run = await root.run();
    expect(run.code).toBe(0);
    const temps = readdirSync(dirname(root.result)).filter((name) => name.endsWith('.tmp'));
    expect(temps).toEqual([basename(liveTemp)]);
  });
});
