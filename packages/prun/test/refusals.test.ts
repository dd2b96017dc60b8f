// Everything prun batch can check before a worker starts is checked first: each refusal is one
// line naming the setting, field or path, exit 2, nothing created, no worker started (fake
// agy's call log stays empty). Run from a scratch working directory with relative paths.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { prun, prunBin, repoRoot, sandbox, workerCalls, workerStarts, type Sandbox } from './helpers.js';

let box: Sandbox;
beforeAll(() => {
  box = sandbox();
});
afterAll(() => box.cleanup());

const unit = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ id, prompt: `UNIT-ID:${id} work`, model: 'fake-model-x', ...extra });

let counter = 0;
/** A fresh scratch directory holding plan.json. */
function caseDir(units: unknown[] = [unit('u1')]): string {
  counter += 1;
  const dir = join(box.root, `case-${counter}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'plan.json'), JSON.stringify({ units }));
  return dir;
}

const listing = (dir: string): string[] => readdirSync(dir, { recursive: true }).map(String).sort();

function expectRefused(result: { exitCode?: number; stderr: unknown; stdout: unknown }, fragment: string): void {
  const stderr = String(result.stderr);
  expect(stderr, stderr).toContain(fragment);
  expect(stderr.split('\n'), stderr).toHaveLength(1);
  expect(stderr).toMatch(/^prun: /);
  expect(stderr).not.toContain('internal error');
  expect(result.exitCode, stderr).toBe(2);
  expect(String(result.stdout)).toBe('');
}

const canUnshare = spawnSync('unshare', ['-m', 'true']).status === 0;
const AS_NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];
const canSetpriv = spawnSync('setpriv', [...AS_NOBODY, 'true']).status === 0;

/**
 * The outermost folder on the way to the checkout that nobody cannot enter (a clone in a folder
 * `mktemp -d` made, 0700), or null when nobody reaches the checkout.
 */
function privateFolderAbove(checkout: string): string | null {
  const parts = checkout.split('/').filter((part) => part !== '');
  for (let depth = 1; depth <= parts.length; depth += 1) {
    const dir = `/${parts.slice(0, depth).join('/')}`;
    if (spawnSync('setpriv', [...AS_NOBODY, 'test', '-x', dir]).status !== 0) return dir;
  }
  return null;
}

const checkout = repoRoot.replace(/\/+$/, '');
const privateFolder = canSetpriv ? privateFolderAbove(checkout) : null;
/** Why prun cannot be started as nobody here, or null. */
const noNobody = !canSetpriv
  ? 'setpriv cannot become nobody'
  : privateFolder === checkout
    ? 'nobody cannot enter the checkout itself'
    : privateFolder !== null && !canUnshare
      ? 'nobody cannot reach this checkout and no mount namespace can show it the checkout'
      : null;

// In a private mount namespace: the folder nobody cannot enter becomes an empty tmpfs that nobody
// may enter, and the checkout is bind-mounted back at its own path. The same files, at the same
// paths, read by a process that is nobody from its start; nothing is mounted outside.
const SHOW_CHECKOUT = [
  'set -e',
  'checkout=$1 folder=$2 held=$3; shift 3',
  'mount --bind "$checkout" "$held"',
  'mount -t tmpfs -o mode=0755 prun-test "$folder"',
  'mkdir -p "$checkout"',
  'mount --move "$held" "$checkout"',
  'exec "$@"',
].join('\n');

/** The command line that runs `argv` as nobody, where nobody can read the checkout. */
function asNobody(argv: string[]): [string, string[]] {
  const setpriv = [...AS_NOBODY, ...argv];
  if (privateFolder === null) return ['setpriv', setpriv];
  const held = mkdtempSync(join(box.root, 'checkout-'));
  return ['unshare', ['-m', 'sh', '-c', SHOW_CHECKOUT, 'sh', checkout, privateFolder, held, 'setpriv', ...setpriv]];
}

/** Run prun with `dir` bind-mounted read-only (a private mount namespace: nothing leaks out). */
function prunWithReadOnly(readOnly: string, args: string[], cwd: string) {
  const script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"';
  return execa('unshare', ['-m', 'sh', '-c', script, 'sh', readOnly, process.execPath, prunBin, ...args], { reject: false, extendEnv: false, env: box.env, cwd });
}

describe('prun batch refuses before the first worker starts', () => {
  const settingCases: Array<[string, NodeJS.ProcessEnv, string]> = [
    ['a timeout with a unit', { ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer'],
    ['a bad sandbox value', { PRUN_AGY_SANDBOX: 'maybe' }, 'PRUN_AGY_SANDBOX must be 1/true/yes/on or 0/false/no/off'],
    ['a bad preflight value', { ANTIGRAVITY_PREFLIGHT: 'sometimes' }, 'ANTIGRAVITY_PREFLIGHT must be auto, force, or off'],
    ['a blank effort', { ANTIGRAVITY_DISPATCH_EFFORT: ' ' }, 'model and effort overrides must be non-empty'],
    ['no agy binary', { ANTIGRAVITY_BIN: '/nonexistent/agy' }, 'no runnable Antigravity CLI found'],
  ];
  it.each(settingCases)('the dispatcher setting check: %s', async (_what, env, fragment) => {
    const dir = caseDir();
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: { ...box.env, ...env }, cwd: dir });
    expectRefused(run, `unit u1: the dispatcher would refuse it: ${fragment}`);
    expect(listing(dir)).toEqual(['plan.json']);
    expect(workerStarts(box.logDir)).toEqual({});
  });

  it('plan and input problems, each naming the field or path', async () => {
    const cases: Array<[string, unknown[] | null, string[], string, (dir: string) => void]> = [
      ['an id starting with a dash', [unit('-x')], [], 'plan field units[0](id -x).id: the dispatcher refuses it: --unit-id must not start with a dash', () => {}],
      ['a 300-character id', [unit('x'.repeat(300))], [], 'must be at most 211 characters', () => {}],
      // 211 fits the state dir, but results/<id>.md's publication temp name would not fit a file name.
      ['a 205-character id', [unit('x'.repeat(205))], [], `unit ${'x'.repeat(205)}: the dispatcher would refuse it: result file name is 1 byte(s) too long to publish`, () => {}],
      ['a 211-character id', [unit('x'.repeat(211))], [], 'the dispatcher would refuse it: result file name is 7 byte(s) too long to publish', () => {}],
      ['a prompt_file that is /dev/zero', [{ id: 'z', prompt_file: '/dev/zero' }], [], 'plan field units[0](id z).prompt_file: /dev/zero is not a regular file', () => {}],
      ['a prompt_file over the bound', [{ id: 'big', prompt_file: 'big.md' }], ['big.md'], 'big.md is larger than 1048576 bytes', (dir) => writeFileSync(join(dir, 'big.md'), 'x'.repeat(1024 * 1024 + 1))],
      ['a missing add_dir', [unit('a', { mode: 'plan', add_dirs: ['nope'] })], [], 'unit a: the dispatcher would refuse it: add_dirs entry is not an existing directory: ', () => {}],
      ['a missing clone source', [unit('c', { clone: '../no-repo' })], [], 'unit c: clone source is not a directory: ', () => {}],
    ];
    for (const [what, units, extra, fragment, setup] of cases) {
      const dir = caseDir(units ?? []);
      setup(dir);
      const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: dir });
      expectRefused(run, fragment);
      expect(listing(dir), what).toEqual(['plan.json', ...extra].sort());
    }
    expect(workerStarts(box.logDir)).toEqual({});
  });

  it('a plan that is a FIFO is refused at once, not waited on', async () => {
    const dir = caseDir();
    expect(spawnSync('mkfifo', [join(dir, 'plan.fifo.json')]).status).toBe(0);
    const started = Date.now();
    const run = await prun(['batch', 'plan.fifo.json', '--dir', 'fanout'], { env: box.env, cwd: dir, timeout: 20_000 });
    expectRefused(run, 'plan.fifo.json is not a regular file');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(listing(dir)).toEqual(['plan.fifo.json', 'plan.json']);
  });

  it('unusable --dir values: /proc/nope (no spin), under a file, an existing file', async () => {
    const cases: Array<[string, string, (dir: string) => void]> = [
      ['/proc/nope', 'cannot create the batch directory /proc/nope', () => {}],
      ['afile/sub', '--dir', (dir) => writeFileSync(join(dir, 'afile'), 'x')],
      ['afile', 'exists and is not a directory', (dir) => writeFileSync(join(dir, 'afile'), 'x')],
    ];
    for (const [target, fragment, setup] of cases) {
      const dir = caseDir();
      setup(dir);
      const before = listing(dir);
      const run = await prun(['batch', 'plan.json', '--dir', target], { env: box.env, cwd: dir, timeout: 20_000 });
      expect(run.timedOut, target).toBeFalsy();
      expectRefused(run, fragment);
      if (target === 'afile/sub') expect(String(run.stderr)).toContain('afile is not a directory');
      expect(listing(dir), target).toEqual(before);
    }
    expect(existsSync('/proc/nope')).toBe(false);
    expect(workerStarts(box.logDir)).toEqual({});
  });

  it.skipIf(!canUnshare)('a read-only parent directory (EROFS) is a usage error and leaves nothing', async () => {
    const dir = caseDir();
    const run = await prunWithReadOnly(dir, ['batch', 'plan.json', '--dir', 'fanout/deeper'], dir);
    expectRefused(run, `--dir ${dir}/fanout/deeper: cannot create it, ${dir} is not writable (EROFS)`);
    expect(listing(dir)).toEqual(['plan.json']);
  });

  it.skipIf(noNobody !== null)(`a parent directory another user owns (EACCES) is a usage error, never internal error${noNobody === null ? '' : ` (skipped: ${noNobody})`}`, async () => {
    const open = mkdtempSync(join(tmpdir(), 'prun-eacces-'));
    try {
      chmodSync(open, 0o755);
      writeFileSync(join(open, 'plan.json'), JSON.stringify({ units: [unit('u1')] }));
      const env = { ...box.env, HOME: open, TMPDIR: open };
      const [file, args] = asNobody([process.execPath, prunBin, 'batch', 'plan.json', '--dir', 'fanout']);
      const run = await execa(file, args, {
        reject: false,
        extendEnv: false,
        env,
        cwd: open,
      });
      expectRefused(run, `--dir ${open}/fanout: cannot create it, ${open} is not writable (EACCES)`);
      expect(readdirSync(open)).toEqual(['plan.json']);
    } finally {
      rmSync(open, { recursive: true, force: true });
    }
  });

  it.skipIf(noNobody !== null)(`a batch directory nobody may search names EACCES, not a missing plan.json${noNobody === null ? '' : ` (skipped: ${noNobody})`}`, async () => {
    const open = mkdtempSync(join(tmpdir(), 'prun-eacces-'));
    try {
      chmodSync(open, 0o755);
      const shut = join(open, 'fanout');
      mkdirSync(shut);
      writeFileSync(join(shut, 'plan.json'), JSON.stringify({ units: [unit('u1')] }));
      writeFileSync(join(shut, 'ledger.jsonl'), '');
      chmodSync(shut, 0o000);
      for (const args of [['status', 'fanout'], ['batch', '--resume', 'fanout'], ['cancel', 'fanout', 'u1']]) {
        const [file, argv] = asNobody([process.execPath, prunBin, ...args]);
        const run = await execa(file, argv, { reject: false, extendEnv: false, env: { ...box.env, HOME: open, TMPDIR: open }, cwd: open });
        expect(run.exitCode, args.join(' ')).toBe(2);
        expect(String(run.stderr), args.join(' ')).toBe(`prun: not a batch directory (plan.json: permission denied): ${shut}`);
      }
    } finally {
      chmodSync(join(open, 'fanout'), 0o755);
      rmSync(open, { recursive: true, force: true });
    }
  });

  it('names why a directory could not be looked at, and prints a hostile name on one line', async () => {
    const dir = caseDir();
    symlinkSync('loop', join(dir, 'loop'));
    const cases: Array<[string, string, string]> = [
      ['loop', 'too many levels of symbolic links', `${dir}/loop`],
      ['plan.json/sub', 'not a directory', `${dir}/plan.json/sub`],
      ['n'.repeat(300), 'file name too long', `${dir}/${'n'.repeat(300)}`],
      ['a\nb\x1b[2J', 'no such directory', `${dir}/a\\x0ab\\x1b[2J`],
    ];
    for (const [target, why, shown] of cases) {
      for (const args of [['status', target], ['batch', '--resume', target]]) {
        const run = await prun(args, { env: box.env, cwd: dir });
        expect(run.exitCode, args.join(' ')).toBe(2);
        expect(String(run.stderr), args.join(' ')).toBe(`prun: not a batch directory (${why}): ${shown}`);
      }
    }
    expect(workerStarts(box.logDir)).toEqual({});
  });

  it('--resume and --retry-failed refuse a bad setting and an unwritable results folder, changing nothing', async () => {
    const dir = caseDir([unit('r1', {}), { id: 'r2', prompt: 'UNIT-ID:r2 [[agy EXIT=3]]', model: 'fake-model-x' }]);
    const first = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: dir });
    expect(first.exitCode).toBe(1);
    const calls = workerCalls(box.logDir).length;
    const ledgerBefore = readFileSync(join(dir, 'fanout', 'ledger.jsonl'), 'utf8');
    const before = listing(dir);

    const bad = await prun(['batch', '--retry-failed', 'fanout'], { env: { ...box.env, ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, cwd: dir });
    expectRefused(bad, 'unit r2: the dispatcher would refuse it: ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer');
    if (canUnshare) {
      const results = join(dir, 'fanout', 'results');
      const readOnly = await prunWithReadOnly(results, ['batch', '--retry-failed', 'fanout'], dir);
      expectRefused(readOnly, `cannot write in ${results} (EROFS)`);
    }
    const notBatch = await prun(['batch', '--resume', 'nowhere'], { env: box.env, cwd: dir });
    expectRefused(notBatch, `not a batch directory (no such directory): ${dir}/nowhere`);
    expect(readFileSync(join(dir, 'fanout', 'ledger.jsonl'), 'utf8')).toBe(ledgerBefore);
    expect(listing(dir)).toEqual(before);
    expect(workerCalls(box.logDir)).toHaveLength(calls);
  }, 30_000);
});

describe('an empty DIR', () => {
  it('is refused (it would mean the working directory), for a new batch and for --resume', async () => {
    const dir = caseDir();
    const fresh = await prun(['batch', 'plan.json', '--dir', ''], { env: box.env, cwd: dir });
    expectRefused(fresh, '--dir must not be empty');
    const resume = await prun(['batch', '--resume', ''], { env: box.env, cwd: dir });
    expectRefused(resume, 'the batch directory must not be empty');
    expect(listing(dir)).toEqual(['plan.json']);
  });
});

describe('the unit id bound', () => {
  it('the longest id the README allows (204 characters) runs and publishes its result', async () => {
    const id = 'y'.repeat(204);
    const dir = caseDir([unit(id)]);
    // Its own call log: the other tests count zero worker starts in the shared one.
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: { ...box.env, FAKE_AGY_LOG_DIR: join(dir, 'agy-log') }, cwd: dir });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(readFileSync(join(dir, 'fanout', 'results', `${id}.md`), 'utf8')).toMatch(new RegExp(`^# ${id} result\n`));
  });
});

describe('state files of a batch directory that are not regular files', () => {
  // A FIFO where the ledger or the driver lock should be: read non-blocking, refused at once.
  it('a FIFO ledger or driver.lock is one line and an exit code at once, never a hang, for status and --resume', async () => {
    const dir = caseDir([unit('f1')]);
    const first = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: dir });
    expect(first.exitCode, String(first.stderr)).toBe(0);
    const calls = workerCalls(box.logDir).length;

    const ledger = join(dir, 'fanout', 'ledger.jsonl');
    const ledgerText = readFileSync(ledger, 'utf8');
    rmSync(ledger);
    expect(spawnSync('mkfifo', [ledger]).status).toBe(0);
    for (const args of [['status', 'fanout'], ['batch', '--resume', 'fanout']]) {
      const result = await prun(args, { env: box.env, cwd: dir, timeout: 20_000 });
      const stderr = String(result.stderr);
      expect(result.timedOut, stderr).toBe(false);
      expect(stderr).toContain(`the ledger ${ledger} is not a regular file`);
      expect(stderr).not.toContain('internal error');
      expect(stderr.trim().split('\n'), stderr).toHaveLength(1);
      expect(result.exitCode, stderr).toBe(102);
    }
    rmSync(ledger);
    writeFileSync(ledger, ledgerText);

    const lock = join(dir, 'fanout', 'driver.lock');
    rmSync(lock);
    expect(spawnSync('mkfifo', [lock]).status).toBe(0);
    const status = await prun(['status', 'fanout'], { env: box.env, cwd: dir, timeout: 20_000 });
    expect(status.timedOut, String(status.stderr)).toBe(false);
    expect(String(status.stderr)).not.toContain('internal error');
    const resume = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: dir, timeout: 20_000 });
    expect(resume.timedOut).toBe(false);
    expect(String(resume.stderr)).not.toContain('internal error');
    expect(String(resume.stderr)).toContain(`the batch's lock file ${lock} is not a regular file`);
    expect(resume.exitCode, String(resume.stderr)).toBe(2);
    expect(workerCalls(box.logDir).length).toBe(calls);
  });
});
