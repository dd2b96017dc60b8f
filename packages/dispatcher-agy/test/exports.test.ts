/**
 * What callers (prun batch) import to refuse before spending: the settings check, the unit-id
 * rule and the argv builder. Each is held against what the built bin itself does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { locateAgy } from '@prun/model-resolve';
import { stateDirName } from '@prun/unit-state';
import {
  MAX_UNIT_ID_LENGTH,
  MESSAGE_PREFIX,
  UsageError,
  checkDispatcherSettings,
  dispatcherArgv,
  dispatcherCommand,
  parseArgs,
  resultPathProblem,
  unitIdProblem,
} from '../src/index.js';
import { BIN, readState, rootPool, runNode } from './harness.js';

const pool = rootPool();

/** The refusal checkDispatcherSettings throws, as [message, exit code], or null. */
function refusal(env: NodeJS.ProcessEnv, locateBinary?: () => string | null): [string, number] | null {
  try {
    checkDispatcherSettings(env, locateBinary ? { locateBinary } : {});
    return null;
  } catch (error) {
    if (error instanceof UsageError) return [error.message, error.exitCode];
    throw error;
  }
}
afterAll(() => pool.cleanup());

describe.concurrent('checkDispatcherSettings', () => {
  test.each([
    [{ ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer'],
    [{ ANTIGRAVITY_DISPATCH_MODEL: ' ' }, 'model and effort overrides must be non-empty'],
    [{ PRUN_AGY_SANDBOX: 'maybe' }, 'PRUN_AGY_SANDBOX must be 1/true/yes/on or 0/false/no/off (got: maybe)'],
    [{ PRUN_AGY_KILL_GRACE_SECONDS: '-1' }, 'PRUN_AGY_KILL_GRACE_SECONDS must be a non-negative number of seconds'],
  ])('%o is refused with the message the bin prints before STATE-DIR', async (env, message) => {
    expect(refusal(env)).toEqual([message, 2]);
    const root = pool.root();
    const run = await root.run({ env });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`${MESSAGE_PREFIX}${message}\n`);
  });

  test.each([
    [{ ANTIGRAVITY_PREFLIGHT: 'sometimes' }, 'ANTIGRAVITY_PREFLIGHT must be auto, force, or off (got: sometimes)'],
    [{ ANTIGRAVITY_PREFLIGHT: 'auto', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '1m' }, 'ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS must be a positive integer'],
  ])('%o (read after STATE-DIR by the bin) is caught up front with the same text', async (env, message) => {
    expect(refusal(env)).toEqual([message, 2]);
    const root = pool.root();
    const run = await root.run({ env: { ...env, FAKE_AGY_MODELS: 'gemini-3.8-flash-high' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${MESSAGE_PREFIX}${message}\n`);
  });

  test('good and default settings pass; a bad preflight timeout is ignored when preflight is off', () => {
    expect(refusal({})).toBeNull();
    expect(refusal({ ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: ' 1_000 ', PRUN_AGY_SANDBOX: 'yes' })).toBeNull();
    expect(refusal({ ANTIGRAVITY_PREFLIGHT: 'off', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: 'x' })).toBeNull();
  });

  test('a missing binary is checked first, with exit 70 as the bin gives it', async () => {
    const root = pool.root();
    const env = { ANTIGRAVITY_BIN: join(root.dir, 'no-such-agy'), ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' };
    const expected = refusal(env, () => locateAgy({ ...root.baseEnv(), ...env }, root.dir));
    expect(expected).toEqual(['no runnable Antigravity CLI found; install agy or set ANTIGRAVITY_BIN', 70]);
    const run = await root.run({ env });
    expect(run.code).toBe(70);
    expect(run.stderr).toBe(`${MESSAGE_PREFIX}${expected![0]}\n`);
  });
});

describe('resultPathProblem', () => {
  // `.<name>.dispatch-task-agy-<7-digit pid>-<16 hex>.tmp` must fit 255 bytes: a name of 207.
  test('a result name whose publication temp fits NAME_MAX passes; one byte more is refused', () => {
    expect(resultPathProblem(`/r/${'x'.repeat(204)}.md`)).toBeNull();
    expect(resultPathProblem(`/r/${'x'.repeat(205)}.md`)).toBe(
      `result file name is 1 byte(s) too long to publish (its temp name would be 256 bytes, over 255): /r/${'x'.repeat(205)}.md`,
    );
    // Bytes, not characters.
    expect(resultPathProblem(`/r/${'é'.repeat(103)}.md`)).not.toBeNull();
  });

  test('the bin refuses such a result path before STATE-DIR, with no worker started', async () => {
    const root = pool.root();
    const resultPath = join(root.dir, `${'x'.repeat(205)}.md`);
    const run = await root.run({ resultPath });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`${MESSAGE_PREFIX}${resultPathProblem(resultPath)}\n`);
    expect(root.stateDirs()).toEqual([]);
    expect(root.workerCalls()).toEqual([]);
  });
});

describe('unitIdProblem', () => {
  test('the dispatcher pattern, and no leading dash', () => {
    expect(unitIdProblem('unit_a-2')).toBeNull();
    expect(unitIdProblem('a/b')).toBe('--unit-id must contain only letters, digits, dashes, or underscores');
    expect(unitIdProblem('')).toBe('--unit-id must contain only letters, digits, dashes, or underscores');
    expect(unitIdProblem('-x')).toMatch(/^--unit-id must not start with a dash/);
    expect(unitIdProblem('a'.repeat(MAX_UNIT_ID_LENGTH))).toBeNull();
    expect(unitIdProblem('a'.repeat(MAX_UNIT_ID_LENGTH + 1))).toMatch(/^--unit-id must be at most 211 characters/);
  });

  test('the longest id still gives a state-directory name that fits a file name, at the largest pid', () => {
    const name = stateDirName({ cwd: '/x', unitId: 'a'.repeat(MAX_UNIT_ID_LENGTH), pid: 4_194_304, nonce: '0123456789abcdef' });
    expect(name.length).toBe(255);
  });

  test('a leading-dash id fails the documented command line', () => {
    const parsed = parseArgs(['--prompt-file', 'p', '--result-file', 'r', '--unit-id', '-x']);
    expect(parsed).toEqual({ kind: 'error', message: 'argument --unit-id: expected one argument' });
  });
});

describe('dispatcherArgv', () => {
  test('round-trips through the parser, values that look like options included', () => {
    const input = {
      promptFile: '/b/prompts/-odd=name.md',
      resultFile: '--result-file',
      unitId: 'u1',
      mode: 'accept-edits' as const,
      addDirs: ['/x', '-y'],
      continueFrom: '/tmp/prun-task-1-u1-2-3',
    };
    expect(parseArgs(dispatcherArgv(input))).toEqual({
      kind: 'args',
      args: {
        promptFile: input.promptFile,
        resultFile: input.resultFile,
        unitId: 'u1',
        mode: 'accept-edits',
        addDirs: ['/x', '-y'],
        continueFrom: input.continueFrom,
      },
    });
  });

  test('optional parts are left out', () => {
    expect(dispatcherArgv({ promptFile: 'p', resultFile: 'r', unitId: 'u', mode: null, continueFrom: null })).toEqual([
      '--prompt-file=p',
      '--result-file=r',
      '--unit-id=u',
    ]);
  });

  test('the built bin runs a unit from the built argv, and fake-agy logs the worker start', async () => {
    const root = pool.root();
    const callLog = join(root.dir, 'agy-calls.jsonl');
    const env = { ...root.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off', FAKE_AGY_CALL_LOG: callLog };
    const argv = dispatcherArgv({ promptFile: root.prompt, resultFile: root.result, unitId: 'unit_a', mode: 'plan' });
    const [node, script] = dispatcherCommand();
    expect(node).toBe(process.execPath);
    expect(script).toBe(BIN);
    const run = await runNode([script, ...argv], { env, cwd: root.dir, timeoutMs: 30_000 });
    expect(run.code).toBe(0);
    const lines = readFileSync(callLog, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const start = JSON.parse(lines[0]!) as { pid: number; argv: string[]; cwd: string };
    expect(start.argv).toContain('--print-timeout');
    expect(start.cwd).toBe(root.work);
    expect(typeof start.pid).toBe('number');
    // The dispatcher records the worker it started; without isolation that is the same pid.
    expect(readState(run.stateDir, 'worker-pid-unverified')).toMatch(/^\d+\n$/);
  });
});
