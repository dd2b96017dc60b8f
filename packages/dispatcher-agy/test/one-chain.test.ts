/**
 * A standalone dispatch starts one isolated chain, not a probe chain and then the worker's: the
 * worker's own chain, parked at its init's `ready` before the state directory exists, is the
 * isolation probe (README, "Isolation and no orphans"). A chain parked for a worker that never
 * starts (the dispatch ends first) is gone when the dispatch is, even in a host that lives on.
 * The bin starts its chain while its command chunk is still being evaluated (early.ts).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runUnit } from '../src/index.js';
import { perlNamespaceFromElf, perlPrctlFromElf, resolveLaunchTools } from '../src/isolation.js';
import { countingPath, skip, title } from './chain-count.js';
import { BIN, PACKAGE_DIR, processRunning, readState, rootPool, runNode, waitFor } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const tools = resolveLaunchTools({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
/** This perl's ELF header gives the numbers: the chain is one perl process up to agy. */
const onePerl = perlPrctlFromElf(tools) > 0 && perlNamespaceFromElf(tools) !== null;

/** Processes of a launch chain started for `dispatcher` up to its launcher (whose argv names that pid after `--`). */
function chainOf(dispatcher: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('--');
      if (argv.some((word) => word.includes('No pragma or module is loaded')) && argv[at + 1] === String(dispatcher) && processRunning(Number(name))) found.push(Number(name));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

describe.concurrent('the isolated chain', () => {
  test.skipIf(skip !== null)(title('a standalone dispatch starts one, which is both the probe and the worker\'s'), async () => {
    const root = pool.root();
    const counting = countingPath(root);
    const run = await root.run({ env: { PRUN_ISOLATE: undefined, PATH: counting.path } });
    expect(run.code).toBe(0);
    expect(root.workerCalls()).toHaveLength(1);
    expect(counting.starts()).toHaveLength(1);
    if (onePerl) {
      // One perl process made the namespace and is its init's parent: no unshare was exec'd, and
      // perl started once for the whole chain (the unshare program's chain: twice, launcher and init).
      expect(counting.unshareStarts()).toEqual([]);
      expect(counting.perlStarts().map((start) => start.kind)).toEqual(['namespace-launcher']);
      expect(readState(run.stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: perl unshare\(2\) (--user --map-current-user )?--pid --fork --mount-proc --kill-child\ncapabilities: none\n/);
    } else {
      expect(counting.unshareStarts()).toEqual(counting.starts());
      expect(readState(run.stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: unshare --pid --fork --mount-proc --kill-child\ncapabilities: none\n/);
    }
    // The worker ran in that chain: its leader is the pid the state records.
    expect(Number(readState(run.stateDir, 'worker-pid-unverified'))).toBe(counting.starts()[0]);
  });

  test.skipIf(skip !== null)(title('a hosted unit that ends before its launch leaves no parked chain while the host lives'), async () => {
    const root = pool.root();
    const counting = countingPath(root);
    const env = { ...root.baseEnv(), PRUN_ISOLATE: 'auto', PATH: counting.path, ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_VERSION_EXIT: '3' };
    let stderr = '';
    const code = await runUnit({
      argv: ['--prompt-file', root.prompt, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'],
      cwd: root.dir,
      env,
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text;
      },
    });
    expect(code).toBe(70);
    expect(stderr).toContain('Antigravity preflight failed');
    expect(root.workerCalls()).toEqual([]);
    const [leader] = counting.starts();
    expect(leader).toBeGreaterThan(0);
    // This process (the host) still holds the chain's stdin: only the dispatch's own cleanup ends it.
    await waitFor(() => !processRunning(leader!), 5_000, `parked chain ${leader} gone`);
  });
});

describe.concurrent('the bin\'s early start', () => {
  test('comes before zod and the dispatch itself in the command chunk', () => {
    const dist = join(PACKAGE_DIR, 'dist');
    const chunk = readdirSync(dist).find((name) => /^bundle-command-.*\.cjs$/.test(name));
    expect(chunk).toBeDefined();
    const source = readFileSync(join(dist, chunk!), 'utf8');
    const at = (region: string): number => source.indexOf(`\n// ${region}`);
    expect(at('dist/early.js')).toBeGreaterThan(0);
    for (const later of ['../../node_modules/.pnpm/zod@', 'dist/run.js', 'dist/validate.js', '../quota/dist/']) {
      expect(at(later), later).toBeGreaterThan(at('dist/early.js'));
    }
  });

  test.skipIf(skip !== null)(title('starts no chain for --help'), async () => {
    const root = pool.root();
    const counting = countingPath(root);
    const run = await runNode([BIN, '--help'], { env: { ...root.baseEnv(), PRUN_ISOLATE: 'auto', PATH: counting.path }, cwd: root.dir, timeoutMs: 30_000 });
    expect(run.code).toBe(0);
    expect(counting.starts()).toEqual([]);
  });

  test.skipIf(skip !== null)(title('leaves no chain and no state directory behind a dispatch refused for bad input'), async () => {
    const root = pool.root();
    const counting = countingPath(root);
    const missing = join(root.dir, 'no-such-prompt.txt');
    let dispatcher = 0;
    const run = await runNode([BIN, '--prompt-file', missing, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'], {
      env: { ...root.baseEnv(), PRUN_ISOLATE: 'auto', PATH: counting.path },
      cwd: root.dir,
      timeoutMs: 30_000,
      onSpawn: (pid) => (dispatcher = pid),
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(root.stateDirs()).toEqual([]);
    // The bin starts its chain while it loads, before it validates (it may be killed before its
    // launcher starts): no link of it may outlive the refusal.
    expect(counting.starts().length).toBeLessThanOrEqual(1);
    await waitFor(() => chainOf(dispatcher).length === 0, 5_000, `no launch chain of dispatcher ${dispatcher} left (${chainOf(dispatcher).join(', ')})`);
    // The launcher (the counted pid) stays as the namespace's parent.
    for (const leader of counting.starts()) await waitFor(() => !processRunning(leader), 5_000, `early chain ${leader} gone`);
  });
});
