import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  loadPoolStatesForDispatch,
  refresh,
  routeForDispatch,
  runUsageQuery,
  type RefreshOptions,
  type RefreshResult,
  type UsageQuery,
  type UsageQueryResult,
  type UsageRunner,
} from '../src/index.js';
import { quotaByIds, tempDir, USAGE_PAYLOAD, writeJson } from './helpers.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');
const FAKE_AGY = fileURLToPath(new URL('../../../tools/fake-agy/fake-agy', import.meta.url));

/** A home with a fake agy file (the runner is injected, so it is never executed). */
function setup(extraEnv: Record<string, string> = {}) {
  const home = tempDir();
  const agy = path.join(home, 'agy');
  writeFileSync(agy, '#!/bin/sh\nexit 99\n');
  chmodSync(agy, 0o755);
  const cache = path.join(home, '.claude', 'agy-quota-cache.json');
  const env = { HOME: home, PATH: '/nonexistent', ANTIGRAVITY_BIN: agy, ...extraEnv };
  return { home, agy, cache, env, marker: `${cache}.last-attempt`, lock: `${cache}.refresh.lock` };
}

function recordingRunner(answer: Partial<UsageQueryResult> = {}): UsageRunner & { calls: UsageQuery[] } {
  const calls: UsageQuery[] = [];
  const runner = async (query: UsageQuery): Promise<UsageQueryResult> => {
    calls.push(query);
    return { stdout: JSON.stringify(USAGE_PAYLOAD), exitCode: 0, timedOut: false, ...answer };
  };
  return Object.assign(runner, { calls });
}

/** Sets a file's mtime to `secondsAgo` before NOW. */
function age(file: string, secondsAgo: number): void {
  mkdirSync(path.dirname(file), { recursive: true });
  if (!existsSync(file)) writeFileSync(file, '{}');
  const when = (NOW - secondsAgo * 1000) / 1000;
  utimesSync(file, when, when);
}

async function run(options: RefreshOptions): Promise<RefreshResult> {
  return refresh({ now: NOW, ...options });
}

describe('refresh', () => {
  it('queries agy from home with the exact argv and deadline, and writes command.data', async () => {
    const s = setup();
    const runner = recordingRunner({ stdout: JSON.stringify({ ...USAGE_PAYLOAD, plan_tier: 'ULTRA' }) });
    const result = await run({ force: false, env: s.env, runner });
    expect(result).toMatchObject({ outcome: 'written', reason: 'written', queried: true, exitCode: 0, path: s.cache });
    expect(runner.calls).toHaveLength(1);
    expect(runner.calls[0]).toMatchObject({
      file: s.agy,
      args: ['-p', '/usage', '--output-format', 'json', '--print-timeout', '30s'],
      cwd: s.home,
      timeoutMs: 35_000,
    });
    const text = readFileSync(s.cache, 'utf8');
    expect(text.startsWith(`{"cached_at": ${NOW / 1000}.0, "usage": {"groups": [{"name": "Gemini Models"`)).toBe(true);
    const written = JSON.parse(text);
    expect(written.usage).toEqual(USAGE_PAYLOAD.command.data);
    expect(written.plan_tier).toBe('ULTRA');
    expect(JSON.parse(readFileSync(s.marker, 'utf8'))).toEqual({ ts: NOW / 1000 });
    expect(existsSync(s.lock)).toBe(false);
  });

  it('with parentDeath starts the same query under setpriv --pdeathsig KILL, so it dies with its host', async () => {
    const s = setup();
    const runner = recordingRunner();
    await run({ force: true, env: s.env, runner, parentDeath: true });
    expect(runner.calls[0]).toMatchObject({
      file: 'setpriv',
      args: ['--pdeathsig', 'KILL', '--', s.agy, '-p', '/usage', '--output-format', 'json', '--print-timeout', '30s'],
      cwd: s.home,
    });
  });

  it("with a parentDeath function starts the query line it returns (the dispatcher's own wrapping where setpriv cannot arm the signal)", async () => {
    const s = setup();
    const runner = recordingRunner();
    const given: string[][] = [];
    const wrap = (command: readonly string[]): string[] => {
      given.push([...command]);
      return ['/opt/p/perl', '-e', 'WRAPPER', '--', ...command];
    };
    await run({ force: true, env: s.env, runner, parentDeath: wrap });
    const usage = [s.agy, '-p', '/usage', '--output-format', 'json', '--print-timeout', '30s'];
    expect(given).toEqual([usage]);
    expect(runner.calls[0]).toMatchObject({ file: '/opt/p/perl', args: ['-e', 'WRAPPER', '--', ...usage], cwd: s.home });
  });

  it('leaves plan_tier out when it is falsy and honours AGY_QUOTA_TIMEOUT_SECONDS', async () => {
    const s = setup({ AGY_QUOTA_TIMEOUT_SECONDS: '7' });
    const runner = recordingRunner({ stdout: JSON.stringify({ ...USAGE_PAYLOAD, plan_tier: '' }) });
    await run({ env: s.env, runner });
    expect(runner.calls[0]?.args.at(-1)).toBe('7s');
    expect(runner.calls[0]?.timeoutMs).toBe(12_000);
    expect('plan_tier' in JSON.parse(readFileSync(s.cache, 'utf8'))).toBe(false);
  });

  it('a snapshot younger than the TTL declines an ordinary refresh with no query', async () => {
    const s = setup();
    age(s.cache, 299);
    const runner = recordingRunner();
    expect(await run({ env: s.env, runner })).toMatchObject({ outcome: 'skipped', reason: 'fresh', queried: false, exitCode: 0 });
    expect(runner.calls).toHaveLength(0);
  });

  it('a snapshot as old as the TTL is refreshed; AGY_QUOTA_TTL_SECONDS changes the TTL, invalid values mean 300', async () => {
    const s = setup();
    age(s.cache, 300);
    const runner = recordingRunner();
    expect((await run({ env: s.env, runner })).outcome).toBe('written');
    age(s.cache, 100);
    age(s.marker, 1000);
    expect((await run({ env: { ...s.env, AGY_QUOTA_TTL_SECONDS: '50' }, runner })).outcome).toBe('written');
    age(s.cache, 100);
    age(s.marker, 1000);
    expect((await run({ env: { ...s.env, AGY_QUOTA_TTL_SECONDS: '-5' }, runner })).reason).toBe('fresh');
    expect((await run({ env: { ...s.env, AGY_QUOTA_TTL_SECONDS: 'soon' }, runner })).reason).toBe('fresh');
    // \ufeff is not whitespace to python3's int(), so this is invalid too (the TTL stays 300).
    expect((await run({ env: { ...s.env, AGY_QUOTA_TTL_SECONDS: '\ufeff5' }, runner })).reason).toBe('fresh');
    expect(runner.calls).toHaveLength(2);
    // python3's int('5_0') is 50: the 100-second-old snapshot is stale again.
    age(s.cache, 100);
    age(s.marker, 1000);
    expect((await run({ env: { ...s.env, AGY_QUOTA_TTL_SECONDS: ' 5_0\xa0' }, runner })).outcome).toBe('written');
    expect(runner.calls).toHaveLength(3);
  });

  it('a future mtime counts as fresh', async () => {
    const s = setup();
    age(s.cache, -600);
    expect((await run({ env: s.env, runner: recordingRunner() })).reason).toBe('fresh');
  });

  it('a recent attempt marker throttles; force passes both the TTL and the marker', async () => {
    const s = setup();
    age(s.marker, 10);
    const runner = recordingRunner();
    expect(await run({ env: s.env, runner })).toMatchObject({ reason: 'recent-attempt', queried: false });
    age(s.cache, 1);
    expect(await run({ force: true, env: s.env, runner })).toMatchObject({ outcome: 'written', queried: true });
    expect(runner.calls).toHaveLength(1);
  });

  it('a failed query exits 1, still leaves the marker (so the next call is throttled) and releases the lock', async () => {
    const s = setup();
    const timeout = recordingRunner({ stdout: '', exitCode: null, timedOut: true });
    expect(await run({ env: s.env, runner: timeout })).toMatchObject({ outcome: 'failed', reason: 'timeout', exitCode: 1, queried: true });
    expect(existsSync(s.marker)).toBe(true);
    expect(existsSync(s.lock)).toBe(false);
    expect(await run({ env: s.env, runner: timeout })).toMatchObject({ reason: 'recent-attempt', exitCode: 0 });
    expect(timeout.calls).toHaveLength(1);
    expect(existsSync(s.cache)).toBe(false);
  });

  it.each<[string, Partial<UsageQueryResult>, string]>([
    ['non-zero exit', { exitCode: 3 }, 'nonzero-exit'],
    ['launch error', { exitCode: null, launchError: 'spawn EACCES' }, 'launch-error'],
    ['not JSON', { stdout: 'quota: lots' }, 'bad-json'],
    ['a JSON array', { stdout: '[1, 2]' }, 'bad-payload'],
    ['a JSON string', { stdout: '"SUCCESS"' }, 'bad-payload'],
    ['status ERROR', { stdout: JSON.stringify({ ...USAGE_PAYLOAD, status: 'ERROR' }) }, 'bad-payload'],
    ['another command', { stdout: JSON.stringify({ ...USAGE_PAYLOAD, command: { ...USAGE_PAYLOAD.command, name: 'models' } }) }, 'bad-payload'],
    ['groups not an array', { stdout: JSON.stringify({ ...USAGE_PAYLOAD, command: { name: 'usage', data: { groups: {} } } }) }, 'bad-payload'],
    [
      'no group named exactly "Gemini Models"',
      { stdout: JSON.stringify({ ...USAGE_PAYLOAD, command: { name: 'quota', data: { groups: [{ name: 'gemini models' }] } } }) },
      'bad-payload',
    ],
  ])('%s → exit 1, no snapshot', async (_label, answer, reason) => {
    const s = setup();
    const result = await run({ force: true, env: s.env, runner: recordingRunner(answer) });
    expect(result).toMatchObject({ outcome: 'failed', reason, exitCode: 1 });
    expect(existsSync(s.cache)).toBe(false);
    expect(existsSync(s.lock)).toBe(false);
  });

  it('"quota" is accepted as the command name', async () => {
    const s = setup();
    const stdout = JSON.stringify({ ...USAGE_PAYLOAD, command: { ...USAGE_PAYLOAD.command, name: 'quota' } });
    expect((await run({ force: true, env: s.env, runner: recordingRunner({ stdout }) })).outcome).toBe('written');
  });

  it('no binary → exit 1 without a query, after writing the marker', async () => {
    const s = setup({ ANTIGRAVITY_BIN: 'no-such-agy-here' });
    const runner = recordingRunner();
    const result = await run({ env: s.env, runner, cwd: s.home });
    expect(result).toMatchObject({ outcome: 'failed', reason: 'no-binary', queried: false, exitCode: 1 });
    expect(runner.calls).toHaveLength(0);
    expect(existsSync(s.marker)).toBe(true);
  });

  it('finds a bare name that exists relative to cwd, and `$VAR` in ANTIGRAVITY_BIN', async () => {
    const s = setup({ ANTIGRAVITY_BIN: 'agy' });
    const runner = recordingRunner();
    await run({ force: true, env: s.env, runner, cwd: s.home });
    expect(runner.calls[0]?.file).toBe(s.agy);
    const viaVar = recordingRunner();
    await run({ force: true, env: { ...s.env, ANTIGRAVITY_BIN: '$HOME/agy' }, runner: viaVar, cwd: '/' });
    expect(viaVar.calls[0]?.file).toBe(s.agy);
    const onPath = recordingRunner();
    await run({ force: true, env: { ...s.env, ANTIGRAVITY_BIN: '', PATH: s.home }, runner: onPath, cwd: '/' });
    expect(onPath.calls[0]?.file).toBe(s.agy);
  });

  it('a fresh lock held by another refresher skips, even when forced', async () => {
    const s = setup();
    age(s.lock, 59);
    const runner = recordingRunner();
    expect(await run({ force: true, env: s.env, runner })).toMatchObject({ outcome: 'skipped', reason: 'locked', exitCode: 0 });
    expect(runner.calls).toHaveLength(0);
    expect(existsSync(s.lock)).toBe(true);
  });

  it('a lock older than timeout + 30 s is stale: removed and taken', async () => {
    const s = setup();
    age(s.lock, 61);
    const runner = recordingRunner();
    expect((await run({ force: true, env: s.env, runner })).outcome).toBe('written');
    expect(runner.calls).toHaveLength(1);
    expect(existsSync(s.lock)).toBe(false);
  });

  it('the stale-lock age follows AGY_QUOTA_TIMEOUT_SECONDS', async () => {
    const s = setup({ AGY_QUOTA_TIMEOUT_SECONDS: '100' });
    age(s.lock, 120);
    expect((await run({ force: true, env: s.env, runner: recordingRunner() })).reason).toBe('locked');
    age(s.lock, 131);
    expect((await run({ force: true, env: s.env, runner: recordingRunner() })).reason).toBe('written');
  });

  it('the clock is read when the answer arrives, so cached_at is the write time', async () => {
    const s = setup();
    let now = NOW;
    const runner: UsageRunner = async () => {
      now += 20_000;
      return { stdout: JSON.stringify(USAGE_PAYLOAD), exitCode: 0, timedOut: false };
    };
    await refresh({ force: true, env: s.env, runner, now: () => now });
    expect(JSON.parse(readFileSync(s.cache, 'utf8')).cached_at).toBe(NOW / 1000 + 20);
    expect(JSON.parse(readFileSync(s.marker, 'utf8')).ts).toBe(NOW / 1000);
  });

  it('writes to AGY_QUOTA_CACHE when set, and never throws when the directory cannot be made', async () => {
    const s = setup();
    const own = path.join(s.home, 'own', 'snap.json');
    expect((await run({ force: true, env: { ...s.env, AGY_QUOTA_CACHE: own }, runner: recordingRunner() })).path).toBe(own);
    expect(existsSync(own)).toBe(true);
    const blocked = path.join(s.agy, 'under-a-file', 'snap.json');
    const result = await run({ force: true, env: { ...s.env, AGY_QUOTA_CACHE: blocked }, runner: recordingRunner() });
    expect(result).toMatchObject({ outcome: 'skipped', exitCode: 0 });
  });

  it('the real runner kills a hung agy at the deadline and reports a timeout', async () => {
    const s = setup({ ANTIGRAVITY_BIN: FAKE_AGY, FAKE_AGY_USAGE_HANG: '1', PATH: process.env['PATH'] ?? '' });
    const runner: UsageRunner = (query) => runUsageQuery({ ...query, timeoutMs: 300 });
    const started = Date.now();
    expect(await run({ force: true, env: s.env, runner })).toMatchObject({ outcome: 'failed', reason: 'timeout', exitCode: 1, queried: true });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(existsSync(s.lock)).toBe(false);
  });

  it('the real runner reports a binary that cannot be executed as a launch error', async () => {
    const s = setup();
    chmodSync(s.agy, 0o644);
    const result = await run({ force: true, env: s.env, runner: runUsageQuery });
    expect(result).toMatchObject({ outcome: 'failed', reason: 'launch-error', exitCode: 1 });
  });

  it('a runner that throws is a launch error, not an exception', async () => {
    const s = setup();
    const result = await run({ force: true, env: s.env, runner: async () => Promise.reject(new Error('boom')) });
    expect(result).toMatchObject({ outcome: 'failed', reason: 'launch-error', detail: 'boom' });
  });
});

describe('loadPoolStatesForDispatch (loading for a dispatch)', () => {
  function managed(values: [number, number], secondsAgo: number) {
    const s = setup();
    writeJson((mkdirSync(path.dirname(s.cache), { recursive: true }), s.cache), quotaByIds(...values));
    age(s.cache, secondsAgo);
    return s;
  }

  function spyRefresh() {
    const calls: RefreshOptions[] = [];
    const fn = async (options: RefreshOptions): Promise<RefreshResult> => {
      calls.push(options);
      return { outcome: 'skipped', reason: 'recent-attempt', queried: false, exitCode: 0, path: '' };
    };
    return Object.assign(fn, { calls });
  }

  it('a managed snapshot up to 900 s old is used without a refresh', async () => {
    const s = managed([0.2, 1], 900);
    const refreshSpy = spyRefresh();
    const states = await loadPoolStatesForDispatch({ env: s.env, now: NOW, refresh: refreshSpy });
    expect(states?.gemini?.remaining).toBe(0.2);
    expect(refreshSpy.calls).toHaveLength(0);
  });

  it('an older managed snapshot triggers one non-forced refresh; still old → no gate', async () => {
    const s = managed([0, 0], 1500);
    const refreshSpy = spyRefresh();
    expect(await loadPoolStatesForDispatch({ env: s.env, now: NOW, refresh: refreshSpy })).toBeNull();
    expect(refreshSpy.calls).toEqual([{ force: false, env: s.env, now: NOW }]);
    const decision = await routeForDispatch({ model: 'gemini-3.8-flash-high', pinned: true, env: s.env, now: NOW, refresh: refreshSpy });
    expect(decision).toEqual({ model: 'gemini-3.8-flash-high' });
  });

  it('a refresh that lands makes the new snapshot count', async () => {
    const s = managed([1, 1], 1500);
    const states = await loadPoolStatesForDispatch({
      env: s.env,
      now: NOW,
      refresh: async () => {
        writeJson(s.cache, quotaByIds(0, 0.5));
        age(s.cache, 0);
        return { outcome: 'written', reason: 'written', queried: true, exitCode: 0, path: s.cache };
      },
    });
    expect(states?.gemini?.remaining).toBe(0);
  });

  it('a future mtime is fresh', async () => {
    const s = managed([0.5, 0.5], -3600);
    const refreshSpy = spyRefresh();
    expect((await loadPoolStatesForDispatch({ env: s.env, now: NOW, refresh: refreshSpy }))?.second?.remaining).toBe(0.5);
    expect(refreshSpy.calls).toHaveLength(0);
  });

  it('AGY_QUOTA_CACHE is read at any age and never refreshed; blank means the managed file', async () => {
    const s = setup();
    const own = writeJson(path.join(s.home, 'own.json'), quotaByIds(0, 0));
    age(own, 86_400 * 30);
    const refreshSpy = spyRefresh();
    const states = await loadPoolStatesForDispatch({ env: { ...s.env, AGY_QUOTA_CACHE: ` ${own} ` }, now: NOW, refresh: refreshSpy });
    expect(states?.gemini?.remaining).toBe(0);
    expect(refreshSpy.calls).toHaveLength(0);
    await loadPoolStatesForDispatch({ env: { ...s.env, AGY_QUOTA_CACHE: '  ' }, now: NOW, refresh: refreshSpy });
    expect(refreshSpy.calls).toHaveLength(1);
  });

  it('missing, unreadable, non-UTF-8 or malformed files are no gate', async () => {
    const s = setup();
    const refreshSpy = spyRefresh();
    const cases: Array<string | Buffer | null> = [null, '', '{', 'null', '[]', '{"usage": 1}', Buffer.from([0x7b, 0xff, 0x7d])];
    for (const content of cases) {
      const file = path.join(s.home, `case-${Math.random()}.json`);
      if (content !== null) writeFileSync(file, content);
      const env = { ...s.env, AGY_QUOTA_CACHE: file };
      expect(await loadPoolStatesForDispatch({ env, now: NOW, refresh: refreshSpy })).toBeNull();
      expect(await routeForDispatch({ model: 'gemini-3.8-flash-high', pinned: false, env, now: NOW, refresh: refreshSpy })).toEqual({
        model: 'gemini-3.8-flash-high',
      });
    }
    const dir = path.join(s.home, 'a-directory');
    mkdirSync(dir);
    expect(await loadPoolStatesForDispatch({ env: { ...s.env, AGY_QUOTA_CACHE: dir }, now: NOW })).toBeNull();
  });

  it('routeForDispatch does not touch the snapshot when the gate is off or the pool is unknown', async () => {
    const s = managed([0, 0], 5000);
    const refreshSpy = spyRefresh();
    expect(await routeForDispatch({ model: 'gemini-3.8-flash-high', pinned: true, env: { ...s.env, PRUN_AGY_QUOTA_GATE: 'off' }, now: NOW, refresh: refreshSpy })).toEqual({ model: 'gemini-3.8-flash-high' });
    expect(await routeForDispatch({ model: 'llama-9', pinned: true, env: s.env, now: NOW, refresh: refreshSpy })).toEqual({ model: 'llama-9' });
    expect(refreshSpy.calls).toHaveLength(0);
  });
});
