/**
 * What callers (prun batch) import to refuse before spending: the settings check, the unit-id
 * rule and the argv builder. Each is held against what the built bin itself does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { MESSAGE_PREFIX, dispatcherArgv, dispatcherSettingsProblem, parseArgs, unitIdProblem } from '../src/index.js';
import { BIN, readState, rootPool, runNode } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

describe.concurrent('dispatcherSettingsProblem', () => {
  test.each([
    [{ ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer'],
    [{ ANTIGRAVITY_DISPATCH_MODEL: ' ' }, 'model and effort overrides must be non-empty'],
    [{ PRUN_AGY_SANDBOX: 'maybe' }, 'PRUN_AGY_SANDBOX must be 1/true/yes/on or 0/false/no/off (got: maybe)'],
    [{ PRUN_AGY_KILL_GRACE_SECONDS: '-1' }, 'PRUN_AGY_KILL_GRACE_SECONDS must be a non-negative number of seconds'],
  ])('%o is refused with the message the bin prints before STATE-DIR', async (env, message) => {
    expect(dispatcherSettingsProblem(env)).toBe(message);
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
    expect(dispatcherSettingsProblem(env)).toBe(message);
    const root = pool.root();
    const run = await root.run({ env: { ...env, FAKE_AGY_MODELS: 'gemini-3.8-flash-high' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${MESSAGE_PREFIX}${message}\n`);
  });

  test('good and default settings pass; a bad preflight timeout is ignored when preflight is off', () => {
    expect(dispatcherSettingsProblem({})).toBeNull();
    expect(dispatcherSettingsProblem({ ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: ' 1_000 ', PRUN_AGY_SANDBOX: 'yes' })).toBeNull();
    expect(dispatcherSettingsProblem({ ANTIGRAVITY_PREFLIGHT: 'off', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: 'x' })).toBeNull();
  });
});

describe('unitIdProblem', () => {
  test('the dispatcher pattern, and no leading dash', () => {
    expect(unitIdProblem('unit_a-2')).toBeNull();
    expect(unitIdProblem('a/b')).toBe('--unit-id must contain only letters, digits, dashes, or underscores');
    expect(unitIdProblem('')).toBe('--unit-id must contain only letters, digits, dashes, or underscores');
    expect(unitIdProblem('-x')).toMatch(/^--unit-id must not start with a dash/);
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
    const run = await runNode([BIN, ...argv], { env, cwd: root.dir, timeoutMs: 30_000 });
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
