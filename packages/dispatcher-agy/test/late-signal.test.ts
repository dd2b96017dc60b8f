/**
 * Once the result is published, the exit code is the outcome whatever signal arrives: a batch
 * or coordinator reads it, and 128+n would record a finished unit as failed. The window this
 * guards is short (the moments between publication and the process being gone, Node's own
 * teardown included), so each trial signals at a random moment just after the result appears.
 */
import { existsSync, watch } from 'node:fs';
import { afterAll, describe, expect, test } from 'vitest';
import { rootPool, type RunResult } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2', 'SIGALRM'];
const TRIALS = 40;
const PARALLEL = 4;

interface Trial {
  signal: NodeJS.Signals;
  delayMs: number;
  workerExit: number;
  result: RunResult;
}

/** One dispatch; `signal` is sent `delayMs` after the result file appears. */
async function trial(signal: NodeJS.Signals, delayMs: number, workerExit: number): Promise<Trial> {
  const root = pool.root();
  let pid = 0;
  let sent = false;
  const watcher = watch(root.dir, () => {
    if (sent || pid === 0 || !existsSync(root.result)) return;
    sent = true;
    watcher.close();
    setTimeout(() => {
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone: the trial still checks its exit code.
      }
    }, delayMs);
  });
  try {
    const result = await root.run({
      env: { FAKE_AGY_EXIT: String(workerExit), PRUN_AGY_QUOTA_GATE: 'off' },
      onSpawn: (p) => {
        pid = p;
      },
    });
    return { signal, delayMs, workerExit, result };
  } finally {
    watcher.close();
  }
}

describe('a signal after publication', () => {
  test(`never changes the exit code (${TRIALS} random trials, success and FALLBACK)`, async () => {
    const plans = Array.from({ length: TRIALS }, (_, i) => ({
      signal: SIGNALS[i % SIGNALS.length]!,
      // Most of the window is the first few milliseconds after the rename.
      delayMs: Math.random() * (i % 4 === 0 ? 20 : 4),
      // A published response (0) and a published FALLBACK (the worker's own code).
      workerExit: i % 2 === 0 ? 0 : 3,
    }));
    const trials: Trial[] = [];
    for (let i = 0; i < plans.length; i += PARALLEL) {
      const batch = plans.slice(i, i + PARALLEL);
      trials.push(...(await Promise.all(batch.map((p) => trial(p.signal, p.delayMs, p.workerExit)))));
    }
    const wrong = trials
      .filter((t) => t.result.code !== t.workerExit || t.result.signal !== null)
      .map((t) => `${t.signal} after ${t.delayMs.toFixed(1)} ms: exit ${t.result.code} signal ${t.result.signal} (want ${t.workerExit})`);
    expect(wrong).toEqual([]);
  }, 120_000);
});
