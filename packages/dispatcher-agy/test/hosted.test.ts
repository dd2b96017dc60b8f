/**
 * runUnit, the library entry a supervisor uses to run many units in one process: each unit has
 * its own cwd, environment, output sinks and stop source, and leaves no trace on the process
 * (no signal handler, no exit code, no reliance on process.cwd() or process.env). What a unit
 * prints and returns is held against what the built bin does with the same input.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { UnitStopper, runUnit, type UnitOptions } from '../src/index.js';
import { BIN, processRunning, rootPool, runNode, waitFor, type Root } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const WATCHED: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2', 'SIGALRM'];

function signalListeners(): number[] {
  return WATCHED.map((signal) => process.listenerCount(signal));
}

interface Hosted {
  code: number;
  stdout: string;
  stderr: string;
  stateDir: string | null;
}

/** The environment the harness gives the bin, with relative paths the unit's cwd must resolve. */
function unitEnv(root: Root, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env = root.baseEnv();
  env.ANTIGRAVITY_PREFLIGHT = 'off';
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

const ARGV = ['--prompt-file', 'prompt.txt', '--result-file', 'unit-result.md', '--unit-id', 'unit_a', '--mode', 'plan'];

async function hosted(root: Root, env: Record<string, string>, options: Partial<UnitOptions> = {}): Promise<Hosted> {
  let stdout = '';
  let stderr = '';
  const code = await runUnit({
    argv: ARGV,
    cwd: root.dir,
    env,
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    ...options,
  });
  const match = /^STATE-DIR (.+)\n$/.exec(stdout);
  return { code, stdout, stderr, stateDir: match ? match[1]! : null };
}

/** The same unit through the built bin (its own process). */
function viaBin(root: Root, env: Record<string, string>): ReturnType<typeof runNode> {
  return runNode([BIN, ...ARGV], { env, cwd: root.dir, timeoutMs: 30_000 });
}

describe('runUnit', () => {
  test('eight units at once in one process: each its own cwd, env and sinks; the process untouched', async () => {
    const listenersBefore = signalListeners();
    const exitCodeBefore = process.exitCode;
    // A unit must never fall back on the host's directory or environment.
    const elsewhere = mkdtempSync(join(tmpdir(), 'prun-hosted-elsewhere-'));
    const savedCwd = process.cwd();
    const savedBin = process.env.ANTIGRAVITY_BIN;
    process.chdir(elsewhere);
    process.env.ANTIGRAVITY_BIN = join(elsewhere, 'no-such-agy');
    try {
      const roots = Array.from({ length: 8 }, () => pool.root());
      const running = roots.map((root, i) =>
        hosted(root, unitEnv(root, { FAKE_AGY_RESPONSE: `# unit_a result\nConclusion: unit ${i} done\n` })),
      );
      // While they run, the process has no handler of theirs.
      expect(signalListeners()).toEqual(listenersBefore);
      const results = await Promise.all(running);
      results.forEach((result, i) => {
        const root = roots[i]!;
        expect(result.code).toBe(0);
        expect(result.stateDir?.startsWith(`${root.dir}/prun-task-`)).toBe(true);
        expect(root.stateDirs()).toHaveLength(1);
        expect(readFileSync(root.result, 'utf8')).toBe(`# unit_a result\nConclusion: unit ${i} done\n`);
        // The worker ran in this unit's directory, with this unit's environment.
        expect(root.worker().cwd).toBe(root.work);
      });
      expect(signalListeners()).toEqual(listenersBefore);
      expect(process.exitCode).toBe(exitCodeBefore);
    } finally {
      process.chdir(savedCwd);
      if (savedBin === undefined) delete process.env.ANTIGRAVITY_BIN;
      else process.env.ANTIGRAVITY_BIN = savedBin;
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  test.each([
    ['a published response', {}],
    ['a FALLBACK after a failed worker', { FAKE_AGY_EXIT: '3', FAKE_AGY_NO_RESULT: '1', FAKE_AGY_STDERR: 'boom\\nmore' }],
    ['a quota block', { AGY_QUOTA_CACHE: undefined }],
    ['a refusal before STATE-DIR', { PRUN_AGY_SANDBOX: 'maybe' }],
    ['a preflight that finds the model unlisted', { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_MODELS: 'other-model' }],
  ])('%s: the same output and exit code as the bin', async (_what, extra) => {
    const [a, b] = [pool.root(), pool.root()];
    const quota = (root: Root): Record<string, string | undefined> =>
      'AGY_QUOTA_CACHE' in extra ? { AGY_QUOTA_CACHE: root.quota(0, 0) } : {};
    const inProcess = await hosted(a, unitEnv(a, { ...extra, ...quota(a) }));
    const bin = await viaBin(b, unitEnv(b, { ...extra, ...quota(b) }));
    const same = (text: string, root: Root, stateDir: string | null): string => {
      let out = text;
      if (stateDir !== null) out = out.split(stateDir).join('<state-dir>');
      return out.split(root.dir).join('<root>');
    };
    expect(inProcess.code).toBe(bin.code);
    expect(same(inProcess.stdout, a, inProcess.stateDir)).toBe(same(bin.stdout, b, bin.stateDir));
    expect(same(inProcess.stderr, a, inProcess.stateDir)).toBe(same(bin.stderr, b, bin.stateDir));
    const result = (root: Root, stateDir: string | null): string | null =>
      existsSync(root.result) ? same(readFileSync(root.result, 'utf8'), root, stateDir) : null;
    expect(result(a, inProcess.stateDir)).toBe(result(b, bin.stateDir));
  });

  test('--version and --help go to the stdout sink', async () => {
    const root = pool.root();
    const out = async (flag: string): Promise<[number, string]> => {
      let text = '';
      const code = await runUnit({ argv: [flag], cwd: root.dir, env: {}, stdout: (t) => (text += t), stderr: () => undefined });
      return [code, text];
    };
    const bin = async (flag: string): Promise<[number | null, string]> => {
      const run = await runNode([BIN, flag], { env: unitEnv(root), cwd: root.dir, timeoutMs: 30_000 });
      return [run.code, run.stdout];
    };
    expect(await out('--version')).toEqual(await bin('--version'));
    expect(await out('--help')).toEqual(await bin('--help'));
  });

  test('onWorkerExit is called once, when the worker has exited and before the result is published', async () => {
    const root = pool.root();
    const seen: Array<{ resultPublished: boolean }> = [];
    const result = await hosted(root, unitEnv(root, { FAKE_AGY_RESPONSE: '# unit_a result\nConclusion: done\n' }), {
      onWorkerExit: () => seen.push({ resultPublished: existsSync(root.result) }),
    });
    expect(result.code).toBe(0);
    expect(seen).toEqual([{ resultPublished: false }]);
    expect(readFileSync(root.result, 'utf8')).toContain('Conclusion: done');
  });

  test('a stop before the unit starts ends it with 128+n and creates nothing', async () => {
    const root = pool.root();
    const stopper = new UnitStopper();
    stopper.stop('SIGINT');
    let workerExits = 0;
    const result = await hosted(root, unitEnv(root), { stop: stopper, onWorkerExit: () => (workerExits += 1) });
    expect(result).toEqual({ code: 130, stdout: '', stderr: '', stateDir: null });
    // No worker was launched, so none exited.
    expect(workerExits).toBe(0);
    expect(root.stateDirs()).toEqual([]);
    expect(root.workerCalls()).toEqual([]);
  });

  test('an abort during preflight publishes the FALLBACK the bin writes for a signal before launch', async () => {
    const root = pool.root();
    const controller = new AbortController();
    const env = unitEnv(root, { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_MODELS_HANG: '1' });
    const running = hosted(root, env, {
      stop: controller.signal,
      stdout: () => {
        // STATE-DIR is printed just before preflight starts.
        setImmediate(() => controller.abort('SIGHUP'));
      },
    });
    const result = await running;
    expect(result.code).toBe(129);
    expect(result.stderr).toContain('dispatch-task-agy: dispatcher received SIGHUP before the Agy worker started\n');
    expect(readFileSync(root.result, 'utf8')).toContain('dispatcher received SIGHUP before the Agy worker started');
    expect(root.workerCalls()).toEqual([]);
  });

  test('stop(SIGTERM) while the worker runs stops its whole tree and publishes the interrupted FALLBACK', async () => {
    const root = pool.root();
    const pidFile = join(root.dir, 'pids');
    const stopper = new UnitStopper();
    const env = unitEnv(root, { FAKE_AGY_HANG: '1', FAKE_AGY_SPAWN_GRANDCHILD: '1', FAKE_AGY_PID_FILE: pidFile });
    const running = hosted(root, env, { stop: stopper });
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim().split('\n').length >= 2, 20_000, 'worker and grandchild');
    stopper.stop('SIGTERM');
    const result = await running;
    expect(result.code).toBe(143);
    expect(readFileSync(root.result, 'utf8')).toContain('dispatcher received SIGTERM; the Agy worker was stopped before it finished');
    for (const pid of readFileSync(pidFile, 'utf8').trim().split('\n').map(Number)) expect(processRunning(pid)).toBe(false);
  });

  test('kill() ends a worker that ignores SIGTERM at once, not after the signal grace', async () => {
    const root = pool.root();
    const pidFile = join(root.dir, 'pids');
    const stopper = new UnitStopper();
    const env = unitEnv(root, {
      FAKE_AGY_HANG: '1',
      FAKE_AGY_IGNORE_SIGTERM: '1',
      FAKE_AGY_PID_FILE: pidFile,
      // Far beyond the test's timeout: only "kill now" can end this unit in time.
      PRUN_AGY_SIGNAL_GRACE_SECONDS: '600',
    });
    const running = hosted(root, env, { stop: stopper });
    await waitFor(() => existsSync(pidFile), 20_000, 'worker start');
    stopper.stop('SIGTERM');
    stopper.kill();
    const result = await running;
    expect(result.code).toBe(143);
    expect(readFileSync(root.result, 'utf8')).toContain('dispatcher received SIGTERM; the Agy worker was stopped before it finished');
    for (const pid of readFileSync(pidFile, 'utf8').trim().split('\n').map(Number)) expect(processRunning(pid)).toBe(false);
  });
});
