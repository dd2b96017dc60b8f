import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/prun-env-scrub.js', import.meta.url));
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const BASE_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

const SECRETS = {
  GEMINI_API_KEY: 'value-gemini-5f1c',
  my_token: 'value-mytoken-77aa',
  SSH_AUTH_SOCK: 'value-sock-0b3e',
  AWS_REGION: 'value-region-9d02',
  GH_TOKEN: 'value-gh-41c7',
};
const KEPT = { ANTIGRAVITY_API_KEY: 'value-agy-kept', HARMLESS: 'value-harmless' };

function run(args: string[], env: Record<string, string> = {}, input?: string) {
  return execa(process.execPath, [BIN, ...args], {
    env: { ...BASE_ENV, ...env },
    extendEnv: false,
    reject: false,
    ...(input === undefined ? {} : { input }),
  });
}

function envNames(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((line) => line.includes('='))
    .map((line) => line.slice(0, line.indexOf('=')));
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'env-scrub-bin-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('prun-env-scrub -- COMMAND', () => {
  it('runs env without the secret-shaped names, keeping ANTIGRAVITY_* and PRUN_KEEP_ENV names', async () => {
    const result = await run(['--', 'env'], { ...SECRETS, ...KEPT, PRUN_KEEP_ENV: 'gh_token' });
    expect(result.exitCode).toBe(0);
    const names = envNames(result.stdout);
    for (const name of ['GEMINI_API_KEY', 'my_token', 'SSH_AUTH_SOCK', 'AWS_REGION']) expect(names).not.toContain(name);
    expect(names).toEqual(expect.arrayContaining(['ANTIGRAVITY_API_KEY', 'HARMLESS', 'GH_TOKEN', 'PRUN_KEEP_ENV', 'PATH']));
    expect(result.stdout).toContain('ANTIGRAVITY_API_KEY=value-agy-kept');
    for (const name of ['GEMINI_API_KEY', 'my_token', 'SSH_AUTH_SOCK', 'AWS_REGION'] as const) {
      expect(result.stdout).not.toContain(SECRETS[name]);
    }
    expect(result.stderr).toBe('');
  });

  it('--keep lets names through, case-insensitively, on top of PRUN_KEEP_ENV', async () => {
    const result = await run(['--keep', 'ssh_auth_sock', '--keep=My_Token,aws_region', '--', 'env'], {
      ...SECRETS,
      PRUN_KEEP_ENV: 'GH_TOKEN',
    });
    expect(result.exitCode).toBe(0);
    const names = envNames(result.stdout);
    expect(names).toEqual(expect.arrayContaining(['SSH_AUTH_SOCK', 'my_token', 'AWS_REGION', 'GH_TOKEN']));
    expect(names).not.toContain('GEMINI_API_KEY');
  });

  it('passes the exit code through', async () => {
    expect((await run(['--', 'sh', '-c', 'exit 7'])).exitCode).toBe(7);
    expect((await run(['--', 'sh', '-c', 'exit 0'])).exitCode).toBe(0);
  });

  it('a child killed by a signal gives 128+n', async () => {
    expect((await run(['--', 'sh', '-c', 'kill -KILL $$'])).exitCode).toBe(137);
    expect((await run(['--', 'sh', '-c', 'kill -TERM $$'])).exitCode).toBe(143);
  });

  it.each([
    ['SIGTERM', 3],
    ['SIGINT', 4],
  ] as const)('forwards %s to the child', async (signal, childCode) => {
    const ready = join(dir, 'ready');
    const marker = join(dir, 'marker');
    const script = `
      const fs = require('node:fs');
      process.on(${JSON.stringify(signal)}, (s) => { fs.writeFileSync(${JSON.stringify(marker)}, s); process.exit(${childCode}); });
      fs.writeFileSync(${JSON.stringify(ready)}, '');
      setInterval(() => {}, 1000);
    `;
    const subprocess = run(['--', process.execPath, '-e', script]);
    await waitFor(() => existsSync(ready), 'the child to start');
    subprocess.kill(signal);
    await waitFor(() => existsSync(marker), 'the child to record the signal');
    const result = await subprocess;
    expect(readFileSync(marker, 'utf8')).toBe(signal);
    expect(result.exitCode).toBe(childCode);
  });

  it('a missing command exits 127 with one message line', async () => {
    const result = await run(['--', 'prun-no-such-command-xyz', 'arg']);
    expect(result.exitCode).toBe(127);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('prun-env-scrub: prun-no-such-command-xyz: command not found');
  });

  it('a command that cannot be executed exits 126', async () => {
    const result = await run(['--', dir]);
    expect(result.exitCode).toBe(126);
    expect(result.stderr.split('\n')).toHaveLength(1);
  });
});

describe('prun-env-scrub --list', () => {
  it('prints the withheld names sorted, one per line, and never a value', async () => {
    const result = await run(['--list'], { ...SECRETS, ...KEPT });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(['AWS_REGION', 'GEMINI_API_KEY', 'GH_TOKEN', 'SSH_AUTH_SOCK', 'my_token'].join('\n'));
    for (const value of [...Object.values(SECRETS), ...Object.values(KEPT)]) {
      expect(result.stdout + result.stderr).not.toContain(value);
    }
  });

  it('--json prints the withheld names and the kept count', async () => {
    const result = await run(['--list', '--json', '--keep', 'gh_token'], { ...SECRETS, ...KEPT, PRUN_KEEP_ENV: 'aws_region' });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      withheld: ['GEMINI_API_KEY', 'SSH_AUTH_SOCK', 'my_token'],
      // PATH, ANTIGRAVITY_API_KEY, HARMLESS, PRUN_KEEP_ENV, AWS_REGION, GH_TOKEN
      kept: 6,
    });
    for (const value of Object.values(SECRETS)) expect(result.stdout).not.toContain(value);
  });

  it('prints nothing when nothing is withheld', async () => {
    const result = await run(['--list'], KEPT);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('');
  });
});

describe('usage', () => {
  it.each([
    [['env'], 'put -- before the command'],
    [[], 'missing -- COMMAND'],
    [['--'], 'missing command after --'],
    [['--frobnicate', '--', 'env'], 'unknown option: --frobnicate'],
    [['--keep'], '--keep needs a value'],
    [['--json', '--', 'env'], '--json only applies to --list'],
    [['--list', '--', 'env'], '--list takes no command'],
  ])('%j exits 2', async (args, message) => {
    const result = await run(args);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.startsWith('prun-env-scrub: ')).toBe(true);
    expect(result.stderr).toContain(message);
    expect(result.stderr.split('\n')).toHaveLength(1);
  });

  it('--help shows usage and the exit codes', async () => {
    const result = await run(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('prun-env-scrub [--keep NAME,...] -- COMMAND [ARG...]');
    expect(result.stdout).toContain('Exit codes:');
    expect(result.stdout).toContain('127');
  });

  it('--version prints the package version', async () => {
    const result = await run(['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(VERSION);
  });
});
