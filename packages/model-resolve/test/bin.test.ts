import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEWEST_IN_FAMILY_TABLE } from './table.js';

const BIN = fileURLToPath(new URL('../bin/prun-model-resolve.js', import.meta.url));
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const SH_DIR = '/bin:/usr/bin';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'model-resolve-bin-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string> = {}, input?: string) {
  return execa(process.execPath, [BIN, ...args], {
    env: { PATH: SH_DIR, ...env },
    extendEnv: false,
    reject: false,
    ...(input === undefined ? { stdin: 'ignore' as const } : { input }),
  });
}

/** A listing as agy prints it: slug, spaces, a description. */
function listingText(listing: readonly string[]): string {
  return listing.map((slug, i) => `${slug}   Model number ${i} (test)\n`).join('');
}

let fileCounter = 0;
function writeListing(listing: readonly string[]): string {
  const file = join(dir, `listing-${(fileCounter += 1)}.txt`);
  writeFileSync(file, listingText(listing));
  return file;
}

function script(name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe.concurrent('the family-resolution table through the bin', () => {
  it.each(NEWEST_IN_FAMILY_TABLE)('--listing FILE: %s over %j -> %s', async (template, listing, expected) => {
    const result = await run([template, '--listing', writeListing(listing)]);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(expected);
  });

  it.each(NEWEST_IN_FAMILY_TABLE)('--listing -: %s over %j -> %s', async (template, listing, expected) => {
    const result = await run(['--listing', '-', template], {}, listingText(listing));
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(expected);
  });
});

describe.concurrent('--json', () => {
  it('prints template, resolved, pool and effort', async () => {
    const file = writeListing(['gemini-3.8-flash-high', 'gemini-3.9-flash-medium', 'claude-sonnet-5-6-high']);
    const gemini = await run(['gemini-3.8-flash-high', '--listing', file, '--json']);
    expect(gemini.exitCode).toBe(0);
    expect(JSON.parse(gemini.stdout)).toEqual({
      template: 'gemini-3.8-flash-high',
      resolved: 'gemini-3.8-flash-high',
      pool: 'gemini',
      effort: 'high',
    });
    const claude = await run(['--json', 'claude-sonnet-4-6', `--listing=${file}`]);
    expect(JSON.parse(claude.stdout)).toEqual({
      template: 'claude-sonnet-4-6',
      resolved: 'claude-sonnet-5-6-high',
      pool: 'second',
      effort: 'high',
    });
  });

  it('effort follows the resolved slug, or ANTIGRAVITY_DISPATCH_EFFORT when set', async () => {
    const file = writeListing(['gemini-3.9-flash-medium']);
    const follows = await run(['gemini-3.8-flash-high', '--listing', file, '--json']);
    expect(JSON.parse(follows.stdout)).toMatchObject({ resolved: 'gemini-3.9-flash-medium', effort: 'medium' });
    const explicit = await run(['gemini-3.8-flash-high', '--listing', file, '--json'], { ANTIGRAVITY_DISPATCH_EFFORT: ' max ' });
    expect(JSON.parse(explicit.stdout)).toMatchObject({ effort: 'max' });
    const blank = await run(['gemini-3.8-flash-high', '--listing', file, '--json'], { ANTIGRAVITY_DISPATCH_EFFORT: ' ' });
    expect(blank.exitCode).toBe(2);
  });

  it('an unknown pool is null', async () => {
    const result = await run(['some-future-model', '--listing', writeListing([]), '--json']);
    expect(JSON.parse(result.stdout)).toMatchObject({ resolved: 'some-future-model', pool: null });
  });
});

describe.concurrent('the listing from $ANTIGRAVITY_BIN models', () => {
  const LISTING = ['gemini-3.8-flash-high', 'gemini-3.10-flash-high', 'claude-sonnet-5-5-high'];

  it('runs `<bin> models` and resolves against its stdout', async () => {
    const args = join(dir, 'args-seen');
    const agy = script('agy-listing', `echo "$@" > '${args}'\nprintf '%s' '${listingText(LISTING)}'\necho 'noise on stderr' >&2`);
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: agy });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('gemini-3.10-flash-high');
    expect(readFileSync(args, 'utf8')).toBe('models\n');
  });

  it('finds agy on PATH when ANTIGRAVITY_BIN is unset', async () => {
    const binDir = mkdtempSync(join(dir, 'path-'));
    writeFileSync(join(binDir, 'agy'), `#!/bin/sh\nprintf '%s' '${listingText(LISTING)}'\n`);
    chmodSync(join(binDir, 'agy'), 0o755);
    const result = await run(['claude-sonnet-4-6'], { PATH: `${binDir}:${SH_DIR}` });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('claude-sonnet-5-5-high');
  });

  it('a failing agy exits 70 with a message', async () => {
    const agy = script('agy-fails', "echo 'not signed in' >&2\nexit 3");
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: agy });
    expect(result.exitCode).toBe(70);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^prun-model-resolve: '.*agy-fails models' exited with code 3; /);
    expect(result.stderr.split('\n')).toHaveLength(1);
  });

  it('a missing agy exits 70 with a message', async () => {
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: join(dir, 'no-such-agy') });
    expect(result.exitCode).toBe(70);
    expect(result.stderr).toBe(`prun-model-resolve: Antigravity CLI not found (ANTIGRAVITY_BIN=${join(dir, 'no-such-agy')})`);
    const unset = await run(['gemini-3.8-flash-high'], { PATH: join(dir, 'empty-path') });
    expect(unset.exitCode).toBe(70);
    expect(unset.stderr).toContain('ANTIGRAVITY_BIN=agy');
  });

  it('a file that cannot be executed exits 70', async () => {
    const file = join(dir, 'agy-not-executable');
    writeFileSync(file, '#!/bin/sh\necho gemini-3.8-flash-high\n');
    chmodSync(file, 0o644);
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: file });
    expect(result.exitCode).toBe(70);
    expect(result.stderr).toMatch(/^prun-model-resolve: could not run /);
  });

  it('an agy that hangs is stopped after ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS (exit 70)', async () => {
    const agy = script('agy-hangs', 'exec sleep 30');
    const started = Date.now();
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: agy, ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '1' });
    expect(result.exitCode).toBe(70);
    expect(result.stderr).toContain('timed out after 1s');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('an invalid ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS is a usage error', async () => {
    const result = await run(['gemini-3.8-flash-high'], { ANTIGRAVITY_BIN: '/bin/true', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '0' });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS');
  });
});

describe.concurrent('usage and errors', () => {
  it.each([
    [[], 'missing TEMPLATE'],
    [['a', 'b', '--listing', '-'], 'expected one TEMPLATE'],
    [['a', '--listing'], '--listing needs'],
    [['a', '--listing='], '--listing needs'],
    [['a', '--frob'], 'unknown option: --frob'],
    [['  ', '--listing', '-'], 'TEMPLATE must not be blank'],
  ])('%j exits 2', async (args, message) => {
    const result = await run(args, {}, '');
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.startsWith('prun-model-resolve: ')).toBe(true);
    expect(result.stderr).toContain(message);
    expect(result.stderr.split('\n')).toHaveLength(1);
  });

  it('an unreadable listing file exits 70', async () => {
    const result = await run(['a', '--listing', join(dir, 'missing.txt')]);
    expect(result.exitCode).toBe(70);
    expect(result.stderr).toContain('cannot read listing');
  });

  it('--help and --version', async () => {
    const help = await run(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Usage: prun-model-resolve TEMPLATE [--listing FILE|-] [--json]');
    expect(help.stdout).toContain('Exit codes:');
    const version = await run(['--version']);
    expect(version.stdout).toBe(VERSION);
  });
});
