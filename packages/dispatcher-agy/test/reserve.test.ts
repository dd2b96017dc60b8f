/**
 * A host that runs unit after unit (a batch's supervisor) passes runUnit one ChainReserve: once
 * two units in a row asked for the same chain (plan, directory, environment), the second parks
 * a spare chain while its worker runs, and the next such unit runs its worker in it instead of
 * starting five execs after it was asked to run. A unit with another environment never takes
 * the spare (it is killed), and closing the reserve kills the spare: nothing is left behind.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ChainReserve, runUnit } from '../src/index.js';
import { countingPath, skip, title } from './chain-count.js';
import { processRunning, readState, rootPool, waitFor } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

describe('a ChainReserve shared by units run one after another', () => {
  test.skipIf(skip !== null)(title('parks the next chain while a unit runs; the next unit alike runs in it, one unlike kills it, close kills it'), async () => {
    const root = pool.root();
    const counting = countingPath(root);
    const env = { ...root.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off', PRUN_ISOLATE: 'pid', PATH: counting.path };
    const reserve = new ChainReserve();
    /** One unit in `root`, its own result file; its state directory. */
    const unit = async (id: string, unitEnv: Record<string, string>): Promise<string> => {
      let stdout = '';
      const code = await runUnit({
        argv: ['--prompt-file', root.prompt, '--result-file', join(root.dir, `${id}.md`), '--unit-id', id, '--mode', 'plan'],
        cwd: root.dir,
        env: unitEnv,
        stdout: (text) => (stdout += text),
        stderr: () => undefined,
        chains: reserve,
      });
      expect(code).toBe(0);
      return /^STATE-DIR (.+)\n$/.exec(stdout)![1]!;
    };
    const workerPid = (stateDir: string): number => Number(readState(stateDir, 'worker-pid-unverified').trim());

    // The first unit probes with its own chain; the second asks for the same and parks a spare.
    await unit('a', env);
    expect(reserve.hasSpare).toBe(false);
    await unit('b', env);
    expect(reserve.hasSpare).toBe(true);
    expect(counting.starts()).toHaveLength(3);
    const spare = counting.starts()[2]!;
    expect(processRunning(spare)).toBe(true);

    // The third runs its worker in that spare (its chain leader is the spare's), and parks the next.
    const c = await unit('c', env);
    expect(workerPid(c)).toBe(spare);
    expect(counting.starts()).toHaveLength(4);
    const next = counting.starts()[3]!;

    // Another environment: the spare is not its chain; it is killed, and no spare is parked after.
    const d = await unit('d', { ...env, SOME_SETTING: 'other' });
    expect(workerPid(d)).not.toBe(next);
    await waitFor(() => !processRunning(next), 10_000, 'the unmatched spare to be killed');
    expect(reserve.hasSpare).toBe(false);

    // Two alike again park one; closing the reserve kills it and parks no more.
    await unit('e', env);
    await unit('f', env);
    expect(reserve.hasSpare).toBe(true);
    const last = counting.starts().at(-1)!;
    expect(processRunning(last)).toBe(true);
    reserve.close();
    expect(reserve.hasSpare).toBe(false);
    await waitFor(() => !processRunning(last), 10_000, 'the closed reserve\'s spare to be killed');
    const before = counting.starts().length;
    await unit('g', env);
    await unit('h', env);
    // Each of the last two started its own chain; none was parked for later.
    expect(counting.starts()).toHaveLength(before + 2);
    expect(reserve.hasSpare).toBe(false);
  }, 120_000);
});
