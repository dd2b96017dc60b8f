import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { quotaByIds, snapshot, tempDir, USAGE_PAYLOAD, writeJson } from './helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(HERE, '../bin/prun-quota.js');
const FAKE_AGY = path.resolve(HERE, '../../../tools/fake-agy/fake-agy');
const PKG_VERSION = JSON.parse(readFileSync(path.resolve(HERE, '../package.json'), 'utf8')).version as string;
const DEFAULT = 'gemini-3.8-flash-high';
const SECOND = 'claude-sonnet-5-5-high';
const SUGGESTION =
  ' Wait for that reset, or name a model in the Claude and GPT group through ANTIGRAVITY_DISPATCH_MODEL if that escalation is wanted.';

/** A clean environment: a temp HOME, no inherited AGY_/ANTIGRAVITY_/PRUN_ settings, agy absent. */
function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const home = tempDir('prun-quota-home-');
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, ANTIGRAVITY_BIN: path.join(home, 'no-agy'), ...extra };
}

async function bin(args: string[], env: Record<string, string>, shellPrefix?: string) {
  const result = shellPrefix
    ? await execa('sh', ['-c', `${shellPrefix}; exec "$0" "$@"`, process.execPath, BIN, ...args], { env, extendEnv: false, reject: false, cwd: env['HOME'] ?? '/' })
    : await execa(process.execPath, [BIN, ...args], { env, extendEnv: false, reject: false, cwd: env['HOME'] ?? '/' });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

function snapshotFile(content: unknown): string {
  return writeJson(path.join(tempDir(), 'snap.json'), content);
}

type Row = { label: string; snap: unknown | null; env?: Record<string, string>; args?: string[]; code: number; stdout: string; stderr: string };

const geminiOnly = (g: number) => snapshot({ gemini: g });
const secondOnly = (s: number) => snapshot({ second: s });

const UNPINNED: Row[] = [
  { label: 'gate off', snap: snapshot({ gemini: 0, second: 0 }), env: { PRUN_AGY_QUOTA_GATE: ' Off ' }, code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'snapshot missing', snap: null, code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'snapshot malformed', snap: '{"usage": [', code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'no known group', snap: { usage: { groups: [{ name: 'Imagen', buckets: [{ remaining_fraction: 0 }] }] } }, code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'g unknown', snap: secondOnly(1), code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'g room, s unknown', snap: geminiOnly(0.2), code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'g empty, s unknown', snap: geminiOnly(0), code: 75, stdout: '', stderr: 'prun-quota: the Agy Gemini quota group is exhausted (resets r).' },
  {
    label: 'g empty, s room (windows not required)',
    snap: snapshot({ gemini: 0, second: { weekly: 0.1 } }),
    code: 0,
    stdout: SECOND,
    stderr: `prun-quota: MODEL-BALANCE from=${DEFAULT} to=${SECOND} reason=freer-meter own=0% other=10%`,
  },
  { label: 'both empty', snap: snapshot({ gemini: 0, second: 0 }), code: 75, stdout: '', stderr: 'prun-quota: both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).' },
  {
    label: 'lead >= 0.15, both windows',
    snap: snapshot({ gemini: 0.125, second: 0.5 }),
    code: 0,
    stdout: SECOND,
    stderr: `prun-quota: MODEL-BALANCE from=${DEFAULT} to=${SECOND} reason=freer-meter own=12% other=50%`,
  },
  { label: 'lead < 0.15', snap: snapshot({ gemini: 0.5, second: 0.64 }), code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'lead >= 0.15, s lacks a window', snap: snapshot({ gemini: { '5h': 0.4, weekly: 0.8 }, second: { weekly: 1 } }), code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'g room, s empty', snap: snapshot({ gemini: 0.3, second: 0 }), code: 0, stdout: DEFAULT, stderr: '' },
  { label: 'blank ANTIGRAVITY_DISPATCH_MODEL is unpinned', snap: quotaByIds(0.2, 1), env: { ANTIGRAVITY_DISPATCH_MODEL: '  ' }, code: 0, stdout: SECOND, stderr: `prun-quota: MODEL-BALANCE from=${DEFAULT} to=${SECOND} reason=freer-meter own=20% other=100%` },
];

const LITERALS: Array<[number, number, string]> = [
  [0.2, 0.34, DEFAULT],
  [0.2, 0.35, SECOND],
  [0.2, 0.36, SECOND],
  [0.5, 0.65, SECOND],
  [0.2, 1.0, SECOND],
  [0.0, 0.1, SECOND],
  [0.86, 0.6, DEFAULT],
  [1.0, 1.0, DEFAULT],
];

const FALLBACK = (from: string, resets: string) =>
  `prun-quota: MODEL-FALLBACK from=${from} to=${DEFAULT} reason=claude-and-gpt-quota-exhausted resets=${resets}`;

const PINNED: Row[] = [
  { label: 'unknown pool', snap: snapshot({ gemini: 0, second: 0 }), args: ['--model', 'some-future-model'], code: 0, stdout: 'some-future-model', stderr: '' },
  { label: 'gemini unknown', snap: secondOnly(0), args: ['--model', 'gemini-3.1-pro-low'], code: 0, stdout: 'gemini-3.1-pro-low', stderr: '' },
  { label: 'gemini room', snap: snapshot({ gemini: 0.01, second: 0 }), args: ['--model', 'gemini-3.1-pro-low'], code: 0, stdout: 'gemini-3.1-pro-low', stderr: '' },
  { label: 'gemini empty, other unknown', snap: geminiOnly(0), args: ['--model', DEFAULT], code: 75, stdout: '', stderr: 'prun-quota: the Agy Gemini quota group is exhausted (resets r).' },
  {
    label: 'gemini empty, other room (named default is pinned, never escalated)',
    snap: snapshot({ gemini: 0, second: 1 }),
    env: { ANTIGRAVITY_DISPATCH_MODEL: ` ${DEFAULT} ` },
    code: 75,
    stdout: '',
    stderr: `prun-quota: the Agy Gemini quota group is exhausted (resets r).${SUGGESTION}`,
  },
  { label: 'gemini empty, other empty', snap: snapshot({ gemini: 0, second: 0 }), args: ['--model', 'gemini-3.1-pro-high'], code: 75, stdout: '', stderr: 'prun-quota: both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).' },
  { label: 'second unknown', snap: geminiOnly(0), args: ['--model', 'claude-opus-4-6-thinking'], code: 0, stdout: 'claude-opus-4-6-thinking', stderr: '' },
  { label: 'second room', snap: quotaByIds(0.86, 0.6), args: ['--model=claude-opus-4-6-thinking'], code: 0, stdout: 'claude-opus-4-6-thinking', stderr: '' },
  { label: 'second empty, gemini room', snap: quotaByIds(0.86, 0), env: { ANTIGRAVITY_DISPATCH_MODEL: 'claude-opus-4-6-thinking' }, code: 0, stdout: DEFAULT, stderr: FALLBACK('claude-opus-4-6-thinking', 'later') },
  { label: 'second empty, gemini unknown', snap: secondOnly(0), args: ['--model', 'gpt-oss-120b-medium'], code: 0, stdout: DEFAULT, stderr: FALLBACK('gpt-oss-120b-medium', 'r') },
  { label: 'second empty, gemini empty', snap: snapshot({ gemini: 0, second: 0 }), args: ['--model', 'claude-opus-4-6-thinking'], code: 75, stdout: '', stderr: 'prun-quota: both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).' },
  { label: '--model wins over ANTIGRAVITY_DISPATCH_MODEL', snap: quotaByIds(1, 1), args: ['--model', 'gpt-oss-120b-medium'], env: { ANTIGRAVITY_DISPATCH_MODEL: 'claude-x' }, code: 0, stdout: 'gpt-oss-120b-medium', stderr: '' },
];

async function routeRow(row: Row) {
  const env = baseEnv(row.env);
  env['AGY_QUOTA_CACHE'] = row.snap === null ? path.join(env['HOME'] as string, 'missing.json') : snapshotFile(row.snap);
  return bin(['route', ...(row.args ?? [])], env);
}

describe.concurrent('prun-quota route: unpinned decision table', () => {
  it.each(UNPINNED)('$label', async (row) => {
    expect(await routeRow(row)).toEqual({ code: row.code, stdout: row.stdout, stderr: row.stderr });
  });

  it.each(LITERALS)('literal check (%s, %s) → %s', async (g, s, model) => {
    const result = await routeRow({ label: '', snap: quotaByIds(g, s), code: 0, stdout: '', stderr: '' });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(model);
  });

  it('literal check (0.0, 0.0) → exit 75', async () => {
    const result = await routeRow({ label: '', snap: quotaByIds(0, 0), code: 0, stdout: '', stderr: '' });
    expect(result).toEqual({ code: 75, stdout: '', stderr: 'prun-quota: both Agy quota groups are exhausted (Gemini resets later, Claude and GPT resets later).' });
  });
});

describe.concurrent('prun-quota route: pinned decision table', () => {
  it.each(PINNED)('$label', async (row) => {
    expect(await routeRow(row)).toEqual({ code: row.code, stdout: row.stdout, stderr: row.stderr });
  });
});

describe.concurrent('prun-quota route --json', () => {
  it('prints {model, pinned, note, block} and still exits 75 when blocked', async () => {
    const blocked = await routeRow({ label: '', snap: geminiOnly(0), args: ['--json'], code: 0, stdout: '', stderr: '' });
    expect(blocked.code).toBe(75);
    expect(JSON.parse(blocked.stdout)).toEqual({ model: DEFAULT, pinned: false, note: null, block: 'the Agy Gemini quota group is exhausted (resets r).' });
    expect(blocked.stderr).toBe('prun-quota: the Agy Gemini quota group is exhausted (resets r).');
  });

  it('a note and a pinned model', async () => {
    const moved = await routeRow({ label: '', snap: quotaByIds(0.86, 0), args: ['--json', '--model', 'claude-opus-4-6-thinking'], code: 0, stdout: '', stderr: '' });
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout)).toEqual({
      model: DEFAULT,
      pinned: true,
      note: `MODEL-FALLBACK from=claude-opus-4-6-thinking to=${DEFAULT} reason=claude-and-gpt-quota-exhausted resets=later`,
      block: null,
    });
  });

  it('passthrough has null note and block', async () => {
    const plain = await routeRow({ label: '', snap: null, args: ['--json'], code: 0, stdout: '', stderr: '' });
    expect(JSON.parse(plain.stdout)).toEqual({ model: DEFAULT, pinned: false, note: null, block: null });
  });
});

function agyEnv(extra: Record<string, string> = {}) {
  const env = baseEnv({ ANTIGRAVITY_BIN: FAKE_AGY, ...extra });
  const home = env['HOME'] as string;
  env['FAKE_AGY_LOG_DIR'] = path.join(home, 'agy-log');
  return { env, home, cache: path.join(home, '.claude', 'agy-quota-cache.json') };
}

function usageCalls(home: string): unknown[] {
  const log = path.join(home, 'agy-log', 'calls.jsonl');
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { kind: string })
    .filter((call) => call.kind === 'usage');
}

async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.concurrent('prun-quota refresh against fake-agy', () => {
  it('--force writes command.data verbatim, atomically (new inode, no temp left), mode 0644 under umask 022', async () => {
    const payload = {
      ...USAGE_PAYLOAD,
      plan_tier: 'ULTRA',
      command: { ...USAGE_PAYLOAD.command, data: { zeta: { nested: [1, 'ü'] }, ...USAGE_PAYLOAD.command.data, alpha: true } },
    };
    const { env, home, cache } = agyEnv({ FAKE_AGY_USAGE_JSON: JSON.stringify(payload) });
    mkdirSync(path.dirname(cache), { recursive: true });
    writeJson(cache, quotaByIds(1, 1));
    const before = statSync(cache).ino;
    const started = Date.now() / 1000;
    const result = await bin(['refresh', '--force'], env, 'umask 022');
    expect(result).toEqual({ code: 0, stdout: '', stderr: `prun-quota: snapshot written to ${cache}` });
    const written = JSON.parse(readFileSync(cache, 'utf8'));
    expect(Object.keys(written)).toEqual(['cached_at', 'usage', 'plan_tier']);
    expect(written.usage).toEqual(payload.command.data);
    expect(Object.keys(written.usage)).toEqual(['zeta', 'groups', 'alpha']);
    expect(written.plan_tier).toBe('ULTRA');
    expect(written.cached_at).toBeGreaterThanOrEqual(started - 1);
    expect(statSync(cache).ino).not.toBe(before);
    expect(statSync(cache).mode & 0o777).toBe(0o644);
    expect(readdirSync(path.dirname(cache)).sort()).toEqual(['agy-quota-cache.json', 'agy-quota-cache.json.last-attempt']);
    const calls = usageCalls(home) as Array<{ argv: string[]; cwd: string }>;
    expect(calls).toHaveLength(1);
    expect(calls[0]?.argv).toEqual(['-p', '/usage', '--output-format', 'json', '--print-timeout', '30s']);
    expect(calls[0]?.cwd).toBe(home);
  });

  it('a second, non-forced refresh inside the TTL queries nothing', async () => {
    const { env, home } = agyEnv();
    expect((await bin(['refresh', '--force'], env)).code).toBe(0);
    const second = await bin(['refresh', '--json'], env);
    expect(second.code).toBe(0);
    // snake_case like every other JSON output (it printed camelCase exitCode before).
    expect(JSON.parse(second.stdout)).toEqual({ outcome: 'skipped', reason: 'fresh', queried: false, exit_code: 0, path: expect.any(String) });
    expect(second.stderr).toBe('prun-quota: refresh skipped: the snapshot is younger than the TTL');
    expect(usageCalls(home)).toHaveLength(1);
  });

  it.each([
    ['agy exits non-zero', { FAKE_AGY_USAGE_EXIT: '3' }],
    ['agy prints a non-success answer', { FAKE_AGY_USAGE_JSON: JSON.stringify({ ...USAGE_PAYLOAD, status: 'ERROR' }) }],
    ['agy prints no JSON', { FAKE_AGY_USAGE_JSON: 'not json' }],
  ])('%s → exit 1, no snapshot, lock released', async (_label, extra) => {
    const { env, home, cache } = agyEnv(extra);
    const result = await bin(['refresh', '--force'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^prun-quota: refresh failed: /);
    expect(existsSync(cache)).toBe(false);
    expect(existsSync(`${cache}.refresh.lock`)).toBe(false);
    expect(usageCalls(home)).toHaveLength(1);
  });

  it('no agy → exit 1 without a query', async () => {
    const env = baseEnv();
    const result = await bin(['refresh'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('prun-quota: refresh failed: agy not found; install the Antigravity CLI or set ANTIGRAVITY_BIN');
  });

  it('a failed refresh exits 1; the next one is throttled by the attempt marker and queries nothing', async () => {
    const { env, home, cache } = agyEnv({ FAKE_AGY_USAGE_EXIT: '9' });
    const first = await bin(['refresh'], env);
    expect(first).toEqual({ code: 1, stdout: '', stderr: 'prun-quota: refresh failed: agy /usage exited with code 9' });
    expect(existsSync(`${cache}.last-attempt`)).toBe(true);
    expect(existsSync(`${cache}.refresh.lock`)).toBe(false);
    const second = await bin(['refresh'], env);
    expect(second).toEqual({ code: 0, stdout: '', stderr: 'prun-quota: refresh skipped: a refresh was attempted within the TTL' });
    expect(usageCalls(home)).toHaveLength(1);
  });

  it('route refreshes a stale managed snapshot (non-forced) and routes on the new reading', async () => {
    const payload = JSON.parse(JSON.stringify(USAGE_PAYLOAD));
    payload.command.data.groups[0].buckets[0].remaining_fraction = 0.1; // gemini weekly 0.1 vs second 0.8
    const { env, home, cache } = agyEnv({ FAKE_AGY_USAGE_JSON: JSON.stringify(payload) });
    mkdirSync(path.dirname(cache), { recursive: true });
    writeJson(cache, quotaByIds(0, 0));
    const old = Date.now() / 1000 - 1000;
    utimesSync(cache, old, old);
    const result = await bin(['route'], env);
    expect(result).toEqual({ code: 0, stdout: SECOND, stderr: `prun-quota: MODEL-BALANCE from=${DEFAULT} to=${SECOND} reason=freer-meter own=10% other=80%` });
    expect(usageCalls(home)).toHaveLength(1);
  });
});

describe.concurrent('prun-quota readout', () => {
  it('prints one row per group with remaining, reset and snapshot age', async () => {
    const now = Date.now() / 1000;
    const inTwoHours = new Date((now + 2 * 3600 + 5 * 60 + 30) * 1000).toISOString();
    const inThreeDays = new Date((now + 3 * 86_400 + 4 * 3600 + 600) * 1000).toISOString();
    const env = baseEnv();
    env['AGY_QUOTA_CACHE'] = snapshotFile({
      cached_at: now - 130,
      plan_tier: 'ULTRA',
      usage: {
        groups: [
          { name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0.125, reset_time: inTwoHours }, { id: 'gemini-weekly', remaining_fraction: 0.4, reset_time: inThreeDays }] },
          { name: 'Claude and GPT models', buckets: [{ id: '3p-5h', window: '5h', remaining_fraction: 0.9 }] },
        ],
      },
    });
    const result = await bin([], env);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n')).toEqual([
      'Agy      Gemini/ULTRA  5h 12% left (resets 2h5m)  7d 40% left (resets 3d4h)  [2m ago]',
      'Agy      Claude/GPT    5h 90% left              7d —                     [2m ago]',
    ]);
    const json = JSON.parse((await bin(['--json'], env)).stdout);
    expect(json).toMatchObject({ path: env['AGY_QUOTA_CACHE'], managed: false, status: 'ok', plan_tier: 'ULTRA', refresh_started: false });
    expect(json.age_seconds).toBeGreaterThanOrEqual(130);
    expect(json.groups).toHaveLength(2);
    expect(json.groups[0]).toMatchObject({ pool: 'gemini', label: 'Gemini/ULTRA', windows: { '5h': { remaining: 0.125, reset: inTwoHours }, weekly: { remaining: 0.4 } } });
    expect(json.groups[1]).toMatchObject({ pool: 'second', label: 'Claude/GPT', windows: { '5h': { remaining: 0.9, reset: null, resets_in_seconds: null }, weekly: null } });
  });

  it('agy missing → "not installed" and no refresh', async () => {
    const env = baseEnv();
    const result = await bin([], env);
    expect(result).toEqual({ code: 0, stdout: 'Agy      (agy not installed; install the Antigravity CLI or set ANTIGRAVITY_BIN)', stderr: '' });
    expect(existsSync(path.join(env['HOME'] as string, '.claude'))).toBe(false);
    expect(JSON.parse((await bin(['--json'], env)).stdout)).toMatchObject({ status: 'not-installed', groups: [], cached_at: null });
  });

  it('a missing managed snapshot starts a background refresh that lands', async () => {
    const { env, home, cache } = agyEnv();
    const result = await bin([], env);
    expect(result).toEqual({ code: 0, stdout: 'Agy      (refresh started)', stderr: '' });
    await until(() => existsSync(cache) && !existsSync(`${cache}.refresh.lock`));
    expect(usageCalls(home)).toHaveLength(1);
    const after = await bin(['--no-refresh'], env);
    expect(after.stdout.split('\n')).toHaveLength(2);
    expect(after.stdout).toContain('Agy      Gemini        5h 75% left');
  });

  it('--no-refresh starts nothing, and a snapshot without groups says so', async () => {
    const { env, home } = agyEnv();
    expect((await bin(['--no-refresh'], env)).stdout).toBe('Agy      (quota cache unavailable)');
    env['AGY_QUOTA_CACHE'] = snapshotFile({ cached_at: 1, usage: { groups: [] } });
    expect((await bin(['--no-refresh'], env)).stdout).toBe('Agy      (quota groups unavailable)');
    expect(usageCalls(home)).toHaveLength(0);
  });
});

describe.concurrent('prun-quota usage', () => {
  it.each([
    [['--bogus'], 'prun-quota: unknown option: --bogus (see prun-quota --help)'],
    [['route', '--model'], "prun-quota: --model needs a value (M) (see prun-quota route --help)"],
    [['route', '--model', '  '], "prun-quota: --model needs a non-blank model name (see prun-quota route --help)"],
    [['refresh', '--model', 'x'], "prun-quota: unknown option: --model (see prun-quota refresh --help)"],
    [['route', 'extra'], "prun-quota: unexpected argument 'extra' (see prun-quota route --help)"],
    [['status'], 'prun-quota: unknown command: status (see prun-quota --help)'],
    [['refresh', '--force', '--force'], "prun-quota: --force given twice (see prun-quota refresh --help)"],
    [['--json=yes'], 'prun-quota: --json takes no value (see prun-quota --help)'],
  ])('%j → exit 2', async (args, message) => {
    expect(await bin(args, baseEnv())).toEqual({ code: 2, stdout: '', stderr: message });
  });

  it('--help lists the exit codes; --version prints the package version', async () => {
    const help = await bin(['route', '--help'], baseEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toContain('75  route: blocked');
    expect(await bin(['--version'], baseEnv())).toEqual({ code: 0, stdout: PKG_VERSION, stderr: '' });
  });
});
