/**
 * The upstream Python dispatcher's integration tests, ported and run against the built bin and
 * tools/fake-agy. Numbers in test names (#20-#65) keep the upstream inventory's numbering, so each
 * case can be matched with the original test it ports.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, test } from 'vitest';
import { DISPATCH_PARALLEL, WORKER_RESULT_TEXT, loopTimeoutMs, mapBounded, readState, rootPool, snapshot } from './harness.js';

const DEFAULT_MODEL = 'gemini-3.8-flash-high';
const SECOND_MODEL = 'claude-sonnet-5-5-high';

const { root, cleanup } = rootPool();
afterAll(cleanup);

function hasPair(argv: string[], flag: string, value: string): boolean {
  return argv.some((token, i) => token === flag && argv[i + 1] === value);
}

describe.concurrent('upstream integration inventory', () => {
  test('#20 plan dispatch streams and atomically publishes', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'auto' } });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^STATE-DIR .+\n$/);
    // --version and models run at once (README "How it works", step 5), then the worker.
    const kinds = r.calls().map((call) => call.kind);
    expect(kinds.slice(0, 2).sort()).toEqual(['models', 'version']);
    expect(kinds.slice(2)).toEqual(['worker']);
    expect(readFileSync(r.result, 'utf8')).toContain('Conclusion: complete');
    const w = r.worker();
    expect(w.argv).toContain(DEFAULT_MODEL);
    expect(w.argv).toContain('high');
    expect(hasPair(w.argv, '--mode', 'plan')).toBe(true);
    expect(w.argv).not.toContain('--dangerously-skip-permissions');
    expect(w.argv).not.toContain('--disable-slash-commands');
    expect(w.argv).not.toContain('--sandbox');
    expect(w.cwd).toBe(r.work);
    expect(w.prompt).toContain('Audit section 3');
    expect(w.prompt).toContain('Never commit, push');
    for (const name of ['timestamp', 'pre-mtime', 'result-file', 'dispatch-pid', 'runtime', 'worker-pid-unverified', 'tail', 'tail.stderr-tmp']) {
      expect(statSync(join(res.stateDir!, name)).isFile(), name).toBe(true);
    }
    expect(existsSync(join(res.stateDir!, 'python-interpreter'))).toBe(false);
  });

  test('#21 default mode is accept-edits with skip permissions', async ({ expect }) => {
    const r = root();
    const res = await r.run({ mode: null, ownCwd: true });
    expect(res.code).toBe(0);
    const w = r.worker();
    expect(hasPair(w.argv, '--mode', 'accept-edits')).toBe(true);
    expect(w.argv).toContain('--dangerously-skip-permissions');
    expect(w.cwd).toBe(join(res.stateDir!, 'work'));
  });

  test('#22 omitted mode with a caller workspace fails before launch', async ({ expect }) => {
    const r = root();
    for (const options of [{ mode: null }, { mode: null, ownCwd: true, args: ['--add-dir', r.work] }]) {
      const res = await r.run(options);
      expect(res.code).toBe(2);
      expect(res.stderr).toContain('explicit');
      expect(res.stdout).toBe('');
      expect(existsSync(r.result)).toBe(false);
      expect(r.workerCalls()).toHaveLength(0);
    }
    expect(r.stateDirs()).toHaveLength(0);
  });

  test('#23 explicit accept-edits in a clone keeps unattended permissions', async ({ expect }) => {
    const r = root();
    const res = await r.run({ mode: 'accept-edits' });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('--dangerously-skip-permissions');
    expect(r.worker().cwd).toBe(r.work);
  });

  test('#24 empty --add-dir and --continue-from fail closed', async ({ expect }) => {
    const r = root();
    for (const args of [['--add-dir', ''], ['--add-dir', '   '], ['--continue-from', ''], ['--continue-from', ' ']]) {
      const res = await r.run({ args });
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toContain('non-empty');
      expect(res.stdout).toBe('');
      expect(existsSync(r.result)).toBe(false);
    }
    expect(r.calls()).toHaveLength(0);
  });

  test('#25 sandbox is off by default and opt-in via env', async ({ expect }) => {
    const r = root();
    expect((await r.run()).code).toBe(0);
    expect(r.worker().argv).not.toContain('--sandbox');
    const r2 = root();
    expect((await r2.run({ mode: 'accept-edits', env: { PRUN_AGY_SANDBOX: '1' } })).code).toBe(0);
    expect(r2.worker().argv).toContain('--sandbox');
    expect(r2.worker().argv).toContain('--dangerously-skip-permissions');
  });

  const sandboxSpellings = [['true', true], [' YES ', true], ['On', true], ['0', false], ['False', false], [' off', false]] as const;
  test('#26 sandbox spellings are case and whitespace insensitive', async ({ expect }) => {
    // One root per spelling, so the dispatches are independent and run a few at a time.
    await mapBounded(sandboxSpellings, DISPATCH_PARALLEL, async ([value, on]) => {
      const r = root();
      const res = await r.run({ env: { PRUN_AGY_SANDBOX: value } });
      expect(res.code, `${value}: ${res.stderr}`).toBe(0);
      const argv = r.worker().argv;
      expect(argv.includes('--sandbox'), value).toBe(on);
      expect(hasPair(argv, '--mode', 'plan')).toBe(true);
      expect(argv).not.toContain('--dangerously-skip-permissions');
    });
  }, loopTimeoutMs(sandboxSpellings.length));

  test('#27 an unrecognised sandbox value fails before launch', async ({ expect }) => {
    const r = root();
    for (const value of ['maybe', 'sandbox']) {
      const res = await r.run({ env: { PRUN_AGY_SANDBOX: value } });
      expect(res.code).toBe(2);
      expect(res.stderr).toContain('PRUN_AGY_SANDBOX');
      expect(res.stderr).toContain(`(got: ${value})`);
      expect(res.stdout).toBe('');
      expect(existsSync(r.result)).toBe(false);
    }
    expect(r.calls()).toHaveLength(0);
  });

  test('#28 plan mode carries neither accept-edits nor skip', async ({ expect }) => {
    const r = root();
    expect((await r.run({ mode: 'plan' })).code).toBe(0);
    const argv = r.worker().argv;
    expect(hasPair(argv, '--mode', 'plan')).toBe(true);
    expect(argv).not.toContain('accept-edits');
    expect(argv).not.toContain('--dangerously-skip-permissions');
  });

  test('#29 the conversation id is recorded from the init event', async ({ expect }) => {
    const r = root();
    const res = await r.run();
    expect(readState(res.stateDir, 'conversation-id')).toBe('conv-fixed-0001\n');
  });

  test('#30 no init conversation id writes no file', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_NO_INIT_CONVERSATION_ID: '1' } });
    expect(res.code).toBe(0);
    expect(existsSync(join(res.stateDir!, 'conversation-id'))).toBe(false);
  });

  test('#31 --add-dir is forwarded for each directory, resolved', async ({ expect }) => {
    const r = root();
    mkdirSync(join(r.dir, 'extra-a'));
    mkdirSync(join(r.dir, 'extra-b'));
    const res = await r.run({ args: ['--add-dir', 'extra-a', '--add-dir', join(r.dir, 'extra-b', '..', 'extra-b')] });
    expect(res.code).toBe(0);
    const argv = r.worker().argv;
    const dirs = argv.flatMap((token, i) => (token === '--add-dir' ? [argv[i + 1]] : []));
    expect(dirs).toEqual([join(r.dir, 'extra-a'), join(r.dir, 'extra-b')]);
  });

  test('#32 --add-dir rejects a missing directory', async ({ expect }) => {
    const r = root();
    const res = await r.run({ args: ['--add-dir', join(r.dir, 'missing')] });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`dispatch-task-agy: --add-dir path is not an existing directory: ${join(r.dir, 'missing')}`);
    expect(res.stdout).toBe('');
    expect(existsSync(r.result)).toBe(false);
    expect(r.calls()).toHaveLength(0);
  });

  test('#33 --continue-from forwards the conversation flag', async ({ expect }) => {
    const r = root();
    const first = await r.run();
    expect(first.code).toBe(0);
    const second = await r.run({ resultPath: join(r.dir, 'second.md'), args: ['--continue-from', first.stateDir!] });
    expect(second.code).toBe(0);
    const calls = r.workerCalls();
    expect(calls).toHaveLength(2);
    expect(hasPair(calls[1]!.argv, '--conversation', 'conv-fixed-0001')).toBe(true);
    expect(calls[0]!.argv).not.toContain('--conversation');
  });

  test('#34 --continue-from without a usable conversation-id exits before launch', async ({ expect }) => {
    const r = root();
    const empty = join(r.dir, 'old-state');
    mkdirSync(empty);
    let res = await r.run({ args: ['--continue-from', empty] });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`--continue-from has no conversation-id file: ${empty}/conversation-id`);
    expect(res.stdout).toBe('');
    writeFileSync(join(empty, 'conversation-id'), '\n');
    res = await r.run({ args: ['--continue-from', empty] });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--continue-from conversation-id file is empty');
    expect(res.stdout).toBe('');
    expect(existsSync(r.result)).toBe(false);
    expect(r.calls()).toHaveLength(0);
  });

  test('#35 an exhausted second group falls back to the Gemini default', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { ANTIGRAVITY_DISPATCH_MODEL: 'claude-opus-4-6-thinking', AGY_QUOTA_CACHE: r.quota(0.86, 0.0) },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain(DEFAULT_MODEL);
    expect(r.worker().argv).not.toContain('claude-opus-4-6-thinking');
    expect(res.stderr).toContain('MODEL-FALLBACK');
    expect(res.stderr).toContain('claude-and-gpt-quota-exhausted');
    expect(readState(res.stateDir, 'model')).toBe(`${DEFAULT_MODEL}\n`);
    expect(existsSync(r.result)).toBe(true);
  });

  test('#36 a named Gemini model is not escalated when its group empties', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_DISPATCH_MODEL: DEFAULT_MODEL, AGY_QUOTA_CACHE: r.quota(0.0, 1.0) } });
    expect(res.code).toBe(75);
    expect(res.stderr).toContain('ANTIGRAVITY_DISPATCH_MODEL');
    expect(r.calls()).toHaveLength(0);
    expect(readFileSync(r.result, 'utf8')).toContain('FALLBACK');
  });

  test('#37 an unpinned unit runs on the group with the freer meter', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { AGY_QUOTA_CACHE: r.quota(0.2, 1.0), FAKE_AGY_MODELS: `${DEFAULT_MODEL}\n${SECOND_MODEL}` },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain(SECOND_MODEL);
    expect(r.worker().argv).not.toContain('--effort');
    expect(res.stderr).toContain(
      `dispatch-task-agy: MODEL-BALANCE from=${DEFAULT_MODEL} to=${SECOND_MODEL} reason=freer-meter own=20% other=100%\n`,
    );
    expect(readState(res.stateDir, 'model')).toBe(`${SECOND_MODEL}\n`);
    expect(readState(res.stateDir, 'quota-note')).toContain('MODEL-BALANCE');
    expect(existsSync(r.result)).toBe(true);
  });

  test('#38 an empty Gemini group moves an unpinned unit rather than stopping it', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { AGY_QUOTA_CACHE: r.quota(0.0, 0.1), FAKE_AGY_MODELS: `${DEFAULT_MODEL}\n${SECOND_MODEL}` } });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain(SECOND_MODEL);
  });

  test('#39 both groups exhausted stops the dispatch', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { AGY_QUOTA_CACHE: r.quota(0.0, 0.0) } });
    expect(res.code).toBe(75);
    expect(res.stderr).toContain('both Agy quota groups are exhausted');
    expect(r.calls()).toHaveLength(0);
    expect(res.stdout).toMatch(/^STATE-DIR /);
    // The quota block comes before the model and quota-note files are written.
    expect(existsSync(join(res.stateDir!, 'model'))).toBe(false);
    expect(readState(res.stateDir, 'tail.stderr-tmp')).toMatch(/^both Agy quota groups are exhausted .*\n$/);
  });

  test('#40 a Claude model is dispatched without effort', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        ANTIGRAVITY_DISPATCH_MODEL: 'claude-opus-4-6-thinking',
        AGY_QUOTA_CACHE: r.quota(0.86, 0.6),
        FAKE_AGY_MODELS: `${DEFAULT_MODEL}\nclaude-opus-4-6-thinking`,
      },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('claude-opus-4-6-thinking');
    expect(r.worker().argv).not.toContain('--effort');
  });

  test('#41 a Gemini model still carries effort', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { AGY_QUOTA_CACHE: r.quota(0.86, 0.6) } });
    expect(res.code).toBe(0);
    expect(hasPair(r.worker().argv, '--effort', 'high')).toBe(true);
  });

  test('#42 an unreadable snapshot does not gate the dispatch', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { AGY_QUOTA_CACHE: join(r.dir, 'missing.json') } });
    expect(res.code).toBe(0);
    expect(existsSync(r.result)).toBe(true);
  });

  test('#43 a backend failure forces a refresh past the readout TTL', async ({ expect }) => {
    const r = root();
    const managed = join(r.home, '.claude', 'agy-quota-cache.json');
    mkdirSync(join(r.home, '.claude'));
    writeFileSync(managed, JSON.stringify(snapshot(0.9, 0.4)));
    const payload = {
      status: 'SUCCESS',
      command: { name: 'usage', data: (snapshot(0.9, 0.0) as { usage: unknown }).usage },
    };
    const res = await r.run({
      env: {
        AGY_QUOTA_CACHE: undefined,
        ANTIGRAVITY_DISPATCH_MODEL: 'claude-opus-4-6-thinking',
        FAKE_AGY_MODELS: `${DEFAULT_MODEL}\nclaude-opus-4-6-thinking`,
        FAKE_AGY_STATUS: 'ERROR',
        FAKE_AGY_ERROR: 'Individual quota reached. Resets in 34m7s.',
        FAKE_AGY_USAGE_JSON: JSON.stringify(payload),
      },
    });
    expect(res.code).toBe(70);
    const kinds = r.calls().map((call) => call.kind);
    // The fresh snapshot needs no refresh for routing; the one query comes after the worker.
    expect(kinds.slice(0, 2).sort()).toEqual(['models', 'version']);
    expect(kinds.slice(2)).toEqual(['worker', 'usage']);
    const cache = JSON.parse(readFileSync(managed, 'utf8')) as { usage: { groups: { name: string; buckets: { remaining_fraction: number }[] }[] } };
    const second = cache.usage.groups.find((g) => g.name === 'Claude and GPT models')!;
    expect(second.buckets.map((b) => b.remaining_fraction)).toEqual([0, 0]);
  });

  test('#44 a non-zero exit publishes a FALLBACK', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_EXIT: '9' } });
    expect(res.code).toBe(9);
    const text = readFileSync(r.result, 'utf8');
    expect(text).toContain('FALLBACK');
    expect(text).toContain('Agy exited with code 9');
  });

  test('#45 a missing result event publishes a FALLBACK', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_NO_RESULT: '1' } });
    expect(res.code).toBe(70);
    expect(readFileSync(r.result, 'utf8')).toContain('without a final result');
  });

  test('#46 an unavailable model fails before the task and publishes the exact FALLBACK', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_MODELS: 'gemini-3.1-pro-high' } });
    expect(res.code).toBe(70);
    expect(r.workerCalls()).toHaveLength(0);
    expect(existsSync(join(res.stateDir!, 'prompt-relay'))).toBe(false);
    const reason = `model '${DEFAULT_MODEL}' is unavailable to this Antigravity account`;
    expect(readFileSync(r.result, 'utf8')).toBe(
      [
        '# unit_a result (FALLBACK, Agy wrote no final result)',
        `Conclusion: INCOMPLETE; ${reason}`,
        'Files: unknown',
        `Open items: ${reason}`,
        'Verification: none (dispatcher fallback)',
        '',
        '## stderr',
        '',
        '```text',
        reason,
        '```',
        '',
      ].join('\n'),
    );
    expect(readState(res.stateDir, 'model')).toBe(`${DEFAULT_MODEL}\n`);
    expect(readState(res.stateDir, 'preflight-tail')).toBe('Antigravity CLI 1.2.0\n\n\ngemini-3.1-pro-high\n\n');
  });

  test('#47 a worker-written result is kept and the response stored beside it', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_WRITE_RESULT: r.result, FAKE_AGY_RESPONSE: 'done' } });
    expect(res.code).toBe(0);
    const text = readFileSync(r.result, 'utf8');
    expect(text).toBe(WORKER_RESULT_TEXT);
    expect(text).not.toContain('FALLBACK');
    expect(readFileSync(join(r.dir, 'unit-result.response.md'), 'utf8')).toBe('done\n');
  });

  test('#48 an ERROR status publishes a FALLBACK with the backend error', async ({ expect }) => {
    const r = root();
    const narration = 'I will begin by reading the repository layout and then audit section 3 carefully.';
    const res = await r.run({
      env: { FAKE_AGY_STATUS: 'ERROR', FAKE_AGY_ERROR: 'Individual quota reached.\nResets in 34m7s.', FAKE_AGY_RESPONSE: narration },
    });
    expect(res.code).toBe(70);
    const lines = readFileSync(r.result, 'utf8').split('\n');
    expect(lines[0]).toContain('FALLBACK');
    expect(lines[0]).not.toBe(narration);
    const conclusion = lines.find((line) => line.startsWith('Conclusion:'))!;
    expect(conclusion).toBe('Conclusion: INCOMPLETE; Agy reported status ERROR: Individual quota reached. Resets in 34m7s.');
    expect(res.stderr).toContain('Individual quota reached');
    // A caller-owned snapshot is never refreshed.
    expect(r.calls().filter((call) => call.kind === 'usage')).toHaveLength(0);
  });

  test('#49 an ERROR status keeps a worker result and exits non-zero', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        FAKE_AGY_WRITE_RESULT: r.result,
        FAKE_AGY_STATUS: 'ERROR',
        FAKE_AGY_ERROR: 'The stream was interrupted.',
        FAKE_AGY_RESPONSE: 'partial narration before the stop',
      },
    });
    expect(res.code).not.toBe(0);
    expect(readFileSync(r.result, 'utf8')).toBe(WORKER_RESULT_TEXT);
    expect(readFileSync(join(r.dir, 'unit-result.response.md'), 'utf8')).toBe('partial narration before the stop\n');
    expect(res.stderr).toContain('The stream was interrupted.');
  });

  test('#50 a trailing status-free result event cannot erase an error', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        FAKE_AGY_STATUS: 'ERROR',
        FAKE_AGY_TRAILING_RESULT_WITHOUT_STATUS: '1',
        FAKE_AGY_RESPONSE: 'a response that is certainly long enough to publish',
      },
    });
    expect(res.code).toBe(70);
    expect(readFileSync(r.result, 'utf8').split('\n')[0]).toContain('FALLBACK');
  });

  test('#51 a non-zero exit keeps a worker-written result', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { FAKE_AGY_WRITE_RESULT: r.result, FAKE_AGY_EXIT: '9', FAKE_AGY_RESPONSE: '  partial narration before the crash  ' },
    });
    expect(res.code).toBe(9);
    expect(readFileSync(r.result, 'utf8')).toBe(WORKER_RESULT_TEXT);
    expect(readFileSync(join(r.dir, 'unit-result.response.md'), 'utf8').trim()).toBe('partial narration before the crash');
  });

  test('#52 a SUCCESS status publishes normally', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_STATUS: 'SUCCESS' } });
    expect(res.code).toBe(0);
    expect(readFileSync(r.result, 'utf8')).toBe(
      '# unit_a result\nConclusion: complete\nFiles: none\nOpen items: none\nVerification: mock\n',
    );
  });

  test('#53 a result event without status publishes normally', async ({ expect }) => {
    const r = root();
    const res = await r.run();
    expect(res.code).toBe(0);
    const events = readState(res.stateDir, 'tail')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { event: string; result?: Record<string, unknown> });
    const last = events.filter((event) => event.event === 'result').at(-1)!;
    expect('status' in last.result!).toBe(false);
  });

  test('#54 an existing result is never overwritten', async ({ expect }) => {
    const r = root();
    writeFileSync(r.result, 'keep me\n');
    const res = await r.run();
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(`dispatch-task-agy: result path already exists; use a fresh path: ${r.result}\n`);
    expect(readFileSync(r.result, 'utf8')).toBe('keep me\n');
    expect(res.stdout).toBe('');
  });

  test('#55 an unpinned unit floats to the newest Gemini model', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_MODELS: 'gemini-3.8-flash-high\ngemini-3.9-flash-high\nclaude-sonnet-4-6' } });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('gemini-3.9-flash-high');
    expect(hasPair(r.worker().argv, '--effort', 'high')).toBe(true);
    expect(readState(res.stateDir, 'model')).toBe('gemini-3.9-flash-high\n');
    expect(res.stderr).toContain(
      'dispatch-task-agy: MODEL-RESOLVE from=gemini-3.8-flash-high to=gemini-3.9-flash-high reason=newest-in-family\n',
    );
    expect(readState(res.stateDir, 'quota-note')).toBe(
      'MODEL-RESOLVE from=gemini-3.8-flash-high to=gemini-3.9-flash-high reason=newest-in-family\n',
    );
  });

  test('#56 a balanced unit floats to the newest Claude model', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        AGY_QUOTA_CACHE: r.quota(0.2, 1.0),
        FAKE_AGY_MODELS: 'claude-opus-5-5-high\nclaude-sonnet-5-5-high\nclaude-sonnet-5-6-medium\nclaude-sonnet-5-6-high',
      },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('claude-sonnet-5-6-high');
    expect(r.worker().argv).not.toContain('--effort');
    expect(readState(res.stateDir, 'model')).toBe('claude-sonnet-5-6-high\n');
    expect(res.stderr).toContain('MODEL-RESOLVE from=claude-sonnet-5-5-high to=claude-sonnet-5-6-high reason=newest-in-family');
  });

  test('#57 an unlisted second template falls back to Gemini', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        AGY_QUOTA_CACHE: r.quota(0.2, 1.0),
        FAKE_AGY_MODELS: 'gemini-3.8-flash-high\ngemini-3.9-flash-high\nclaude-sonnet-9-0-renamed',
      },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('gemini-3.9-flash-high');
    expect(hasPair(r.worker().argv, '--effort', 'high')).toBe(true);
    const line = 'MODEL-FALLBACK from=claude-sonnet-5-5-high to=gemini-3.9-flash-high reason=template-unlisted';
    expect(res.stderr).toContain(`dispatch-task-agy: ${line}\n`);
    const note = readState(res.stateDir, 'quota-note').split('\n');
    expect(note[0]).toMatch(/^MODEL-BALANCE/);
    expect(note[1]).toBe(line);
  });

  test('#58 a fallback into an empty Gemini group stops before launch', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { AGY_QUOTA_CACHE: r.quota(0.0, 1.0), FAKE_AGY_MODELS: 'gemini-3.8-flash-high\nclaude-sonnet-9-0-renamed' },
    });
    expect(res.code).toBe(75);
    expect(res.stderr).toContain('MODEL-FALLBACK');
    expect(res.stderr).toContain('dispatch-task-agy: after MODEL-FALLBACK to gemini-3.8-flash-high: ');
    expect(r.workerCalls()).toHaveLength(0);
    const note = readState(res.stateDir, 'quota-note').split('\n');
    expect(note[0]).toMatch(/^MODEL-BALANCE/);
    expect(note[1]).toMatch(/^MODEL-FALLBACK/);
    expect(note[1]).toContain('reason=template-unlisted');
    expect(readFileSync(r.result, 'utf8')).toContain('FALLBACK');
  });

  test('#59 effort follows a resolved tier other than high', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_MODELS: 'gemini-3.9-flash-medium\ngemini-3.9-flash-low' } });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('gemini-3.9-flash-medium');
    expect(hasPair(r.worker().argv, '--effort', 'medium')).toBe(true);
  });

  // #60 compares two Python copies of newest_in_family in the upstream repo; it has no TS analogue.

  test('#61 an unlisted named model still fails the preflight', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { ANTIGRAVITY_DISPATCH_MODEL: SECOND_MODEL, FAKE_AGY_MODELS: 'gemini-3.8-flash-high\nclaude-sonnet-9-0-renamed' },
    });
    expect(res.code).toBe(70);
    expect(res.stderr).toContain('unavailable');
    expect(res.stderr).not.toContain('MODEL-FALLBACK');
    expect(r.workerCalls()).toHaveLength(0);
    expect(readFileSync(r.result, 'utf8')).toContain('FALLBACK');
  });

  test('#62 a named model is never floated', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { ANTIGRAVITY_DISPATCH_MODEL: 'claude-sonnet-4-6', FAKE_AGY_MODELS: 'claude-sonnet-4-6\nclaude-sonnet-4-7' },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('claude-sonnet-4-6');
    expect(r.worker().argv).not.toContain('claude-sonnet-4-7');
    expect(res.stderr).not.toContain('MODEL-RESOLVE');
    expect(readState(res.stateDir, 'model')).toBe('claude-sonnet-4-6\n');
  });

  test('#63 the model-fallback path floats to the newest Gemini', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        ANTIGRAVITY_DISPATCH_MODEL: 'claude-opus-4-6-thinking',
        AGY_QUOTA_CACHE: r.quota(0.86, 0.0),
        FAKE_AGY_MODELS: 'gemini-3.8-flash-high\ngemini-3.9-flash-high\nclaude-opus-4-6-thinking',
      },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('gemini-3.9-flash-high');
    expect(r.worker().argv).not.toContain('claude-opus-4-6-thinking');
    expect(hasPair(r.worker().argv, '--effort', 'high')).toBe(true);
    const resolve = 'MODEL-RESOLVE from=gemini-3.8-flash-high to=gemini-3.9-flash-high reason=newest-in-family';
    expect(res.stderr).toContain('MODEL-FALLBACK');
    expect(res.stderr).toContain(resolve);
    expect(readState(res.stateDir, 'model')).toBe('gemini-3.9-flash-high\n');
    const note = readState(res.stateDir, 'quota-note').split('\n');
    expect(note[0]).toMatch(/^MODEL-FALLBACK from=claude-opus-4-6-thinking /);
    expect(note[1]).toBe(resolve);
  });

  test('#64 preflight off keeps the constant model', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'off', FAKE_AGY_MODELS: 'gemini-3.9-flash-high' } });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain(DEFAULT_MODEL);
    expect(r.worker().argv).not.toContain('gemini-3.9-flash-high');
    expect(res.stderr).not.toContain('MODEL-RESOLVE');
    expect(readState(res.stateDir, 'model')).toBe(`${DEFAULT_MODEL}\n`);
    expect(r.calls().map((call) => call.kind)).toEqual(['worker']);
    expect(existsSync(join(res.stateDir!, 'preflight-tail'))).toBe(false);
  });

  test('#65 a user-named default model is not floated', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { ANTIGRAVITY_DISPATCH_MODEL: DEFAULT_MODEL, FAKE_AGY_MODELS: 'gemini-3.8-flash-high\ngemini-3.9-flash-high' },
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain(DEFAULT_MODEL);
    expect(res.stderr).not.toContain('MODEL-RESOLVE');
  });
});
