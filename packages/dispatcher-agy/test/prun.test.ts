/**
 * What prun adds beyond the original (README, "Beyond the original") and the validation surface
 * (README, "How it works", step 1), run against the built bin and tools/fake-agy.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, test } from 'vitest';
import { BIN, DISPATCH_PARALLEL, Root, loopTimeoutMs, mapBounded, processAlive, processRunning, readState, rootPool, runNode, waitFor } from './harness.js';

const { root, cleanup } = rootPool();
afterAll(cleanup);

function pids(file: string): number[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map(Number);
}

const NO_TRACE = /^\s+at /m;

describe.concurrent('signals and deadline', () => {
  test('SIGTERM stops the whole worker group, publishes a FALLBACK naming it, exits 143', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    let dispatcherPid = 0;
    const running = r.run({
      env: {
        FAKE_AGY_HANG: '1',
        FAKE_AGY_IGNORE_SIGTERM: '1',
        FAKE_AGY_SPAWN_GRANDCHILD: '1',
        FAKE_AGY_PID_FILE: pidFile,
        PRUN_AGY_SIGNAL_GRACE_SECONDS: '0.3',
      },
      onSpawn: (pid) => {
        dispatcherPid = pid;
      },
    });
    await waitFor(() => pids(pidFile).length === 2 && r.workerCalls().length === 1, 15_000, 'worker and grandchild');
    const workerPids = pids(pidFile);
    // The tail grows while the worker still runs: the init line is there before any exit.
    const stateDir = readdirState(r);
    await waitFor(() => readFileSync(join(stateDir, 'tail'), 'utf8').includes('"event": "init"'), 10_000, 'live tail');
    process.kill(dispatcherPid, 'SIGTERM');
    const res = await running;
    expect(res.code).toBe(143);
    const text = readFileSync(r.result, 'utf8');
    expect(text.split('\n')[0]).toBe('# unit_a result (FALLBACK, Agy wrote no final result)');
    expect(text).toContain('SIGTERM');
    expect(text).toContain('"event": "init"');
    expect(res.stderr).toContain('dispatch-task-agy: dispatcher received SIGTERM');
    expect(readState(res.stateDir, 'worker-pid-unverified')).toBe(`${workerPids[0]}\n`);
    await waitFor(() => workerPids.every((pid) => !processRunning(pid)), 5_000, 'worker group gone');
  });

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const) {
    test(`${signal} is forwarded too and gives exit ${code}`, async ({ expect }) => {
      const r = root();
      const pidFile = join(r.dir, 'pids');
      let dispatcherPid = 0;
      const running = r.run({
        env: { FAKE_AGY_HANG: '1', FAKE_AGY_PID_FILE: pidFile },
        onSpawn: (pid) => {
          dispatcherPid = pid;
        },
      });
      await waitFor(() => r.workerCalls().length === 1, 15_000, 'worker');
      process.kill(dispatcherPid, signal);
      const res = await running;
      expect(res.code).toBe(code);
      expect(readFileSync(r.result, 'utf8')).toContain(`dispatcher received ${signal}`);
      await waitFor(() => pids(pidFile).every((pid) => !processRunning(pid)), 5_000, 'worker gone');
    });
  }

  test('a signal during preflight kills the preflight command and still publishes a FALLBACK', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    let dispatcherPid = 0;
    const running = r.run({
      env: { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_VERSION_HANG: '1', FAKE_AGY_PID_FILE: pidFile },
      onSpawn: (pid) => {
        dispatcherPid = pid;
      },
    });
    // --version hangs; models runs beside it and may already be done.
    await waitFor(() => pids(pidFile).length >= 1, 15_000, 'preflight command');
    process.kill(dispatcherPid, 'SIGTERM');
    const res = await running;
    expect(res.code).toBe(143);
    expect(res.stdout).toMatch(/^STATE-DIR /);
    expect(readFileSync(r.result, 'utf8')).toContain('dispatcher received SIGTERM before the Agy worker started');
    expect(r.workerCalls()).toHaveLength(0);
    await waitFor(() => pids(pidFile).every((pid) => !processRunning(pid)), 5_000, 'preflight gone');
  });

  test('its own deadline kills a hung worker and exits 124', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    const started = Date.now();
    const res = await r.run({
      env: {
        ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '1',
        PRUN_AGY_KILL_GRACE_SECONDS: '0.2',
        PRUN_AGY_SIGNAL_GRACE_SECONDS: '0.2',
        FAKE_AGY_HANG: '1',
        FAKE_AGY_IGNORE_SIGTERM: '1',
        FAKE_AGY_SPAWN_GRANDCHILD: '1',
        FAKE_AGY_PID_FILE: pidFile,
      },
    });
    expect(res.code).toBe(124);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1200);
    expect(r.worker().argv).toContain('1s');
    const text = readFileSync(r.result, 'utf8');
    expect(text).toContain('FALLBACK');
    expect(text).toContain('Agy did not exit within 1.2s');
    await waitFor(() => pids(pidFile).length === 2 && pids(pidFile).every((pid) => !processRunning(pid)), 5_000, 'group gone');
  });

  test('a signal after the worker exited does not turn its finished result into a FALLBACK', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    let dispatcherPid = 0;
    const running = r.run({
      // A detached process keeps the captures open for a while after the worker exits.
      env: { FAKE_AGY_PIPE_HOLDER_MS: '4000', FAKE_AGY_PID_FILE: pidFile },
      onSpawn: (pid) => {
        dispatcherPid = pid;
      },
    });
    try {
      // Reaped (not just a zombie): the dispatcher has seen the exit.
      await waitFor(() => pids(pidFile).length === 2 && !processAlive(pids(pidFile)[0]!), 15_000, 'worker exit');
      // The captures stay open for 2 s after the exit; on a very slow machine the dispatcher may
      // already be done, which must not fail the test either.
      try {
        process.kill(dispatcherPid, 'SIGTERM');
      } catch {
        // already finished
      }
      const res = await running;
      expect(res.code).toBe(0);
      expect(readFileSync(r.result, 'utf8')).toContain('Conclusion: complete');
    } finally {
      for (const pid of pids(pidFile)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });

  test('a worker killed by a signal gives 128+n and a reason naming the signal', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_KILL_SELF: 'SIGKILL' } });
    expect(res.code).toBe(137);
    expect(readFileSync(r.result, 'utf8')).toContain('Conclusion: INCOMPLETE; Agy was killed by signal SIGKILL');
  });

  test('leftover processes of a worker that exited normally are stopped', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    const res = await r.run({ env: { FAKE_AGY_SPAWN_GRANDCHILD: '1', FAKE_AGY_PID_FILE: pidFile } });
    expect(res.code).toBe(0);
    expect(pids(pidFile)).toHaveLength(2);
    await waitFor(() => pids(pidFile).every((pid) => !processRunning(pid)), 5_000, 'grandchild gone');
  });
});

function readdirState(r: Root): string {
  const dirs = r.stateDirs();
  if (dirs.length !== 1) throw new Error(`expected one state dir, got ${dirs.length}`);
  return join(r.dir, dirs[0]!);
}

describe.concurrent('clean errors', () => {
  test('invalid UTF-8 in the prompt is exit 2 with one line', async ({ expect }) => {
    const r = root();
    writeFileSync(r.prompt, Buffer.from([0x66, 0xff, 0xfe, 0x0a]));
    const res = await r.run();
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe(`dispatch-task-agy: prompt file is not valid UTF-8: ${r.prompt}\n`);
  });

  test('invalid UTF-8 in a conversation-id file is exit 2 with one line', async ({ expect }) => {
    const r = root();
    const old = join(r.dir, 'old');
    mkdirSync(old);
    writeFileSync(join(old, 'conversation-id'), Buffer.from([0xc3, 0x28, 0x0a]));
    const res = await r.run({ args: ['--continue-from', old] });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('conversation-id file is not valid UTF-8');
    expect(res.stderr).not.toMatch(NO_TRACE);
  });

  test('a FALLBACK that cannot be written is exit 70 with a message', async ({ expect }) => {
    const r = root();
    writeFileSync(join(r.dir, 'blocker'), 'a file where a directory should be\n');
    const res = await r.run({ resultPath: join(r.dir, 'blocker', 'sub', 'r.md'), env: { FAKE_AGY_EXIT: '9' } });
    expect(res.code).toBe(70);
    expect(res.stdout).toMatch(/^STATE-DIR /);
    expect(res.stderr).toContain('dispatch-task-agy: could not write FALLBACK result to');
    expect(res.stderr).toContain('dispatch-task-agy: Agy exited with code 9');
    expect(res.stderr).not.toMatch(NO_TRACE);
  });

  test('a scratch directory that cannot be made is exit 2 before STATE-DIR; the state dir stays, whole (dispatch-pid inside)', async ({ expect }) => {
    const r = root();
    const file = join(r.dir, 'not-a-dir');
    writeFileSync(file, 'x\n');
    const res = await r.run({ env: { PRUN_SCRATCH_CWD: file } });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^dispatch-task-agy: failed to prepare isolated working directory: .+\n$/);
    expect(r.stateDirs()).toHaveLength(1);
    // Whole, as every state dir is when it becomes visible: a monitor finds the dead dispatcher.
    expect(readState(join(r.dir, r.stateDirs()[0]!), 'dispatch-pid')).toMatch(/^[1-9][0-9]*\n$/);
    expect(readState(join(r.dir, r.stateDirs()[0]!), 'result-file')).toBe(`${r.result}\n`);
    expect(readdirSync(r.dir).filter((name) => name.startsWith('.prun-building-'))).toEqual([]);
    expect(existsSync(r.result)).toBe(false);
  });

  test('a missing binary is exit 70 before STATE-DIR', async ({ expect }) => {
    const r = root();
    for (const bin of [join(r.dir, 'no-such-agy'), '', 'no-such-agy-on-path']) {
      const res = await r.run({ env: { ANTIGRAVITY_BIN: bin } });
      expect(res.code, bin).toBe(70);
      expect(res.stdout).toBe('');
      expect(res.stderr).toBe('dispatch-task-agy: no runnable Antigravity CLI found; install agy or set ANTIGRAVITY_BIN\n');
    }
    expect(r.stateDirs()).toHaveLength(0);
  });

  test('a binary that cannot be launched is exit 70 with a FALLBACK', async ({ expect }) => {
    const r = root();
    const notExecutable = join(r.dir, 'agy');
    writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    const res = await r.run({ env: { ANTIGRAVITY_BIN: notExecutable } });
    expect(res.code).toBe(70);
    expect(readFileSync(r.result, 'utf8')).toContain('failed to launch Antigravity CLI');
    expect(readState(res.stateDir, 'tail.stderr-tmp')).toMatch(/^failed to launch Antigravity CLI: .+\n$/);
    // The captures are opened once the worker runs: a launch failure leaves no `tail`.
    expect(existsSync(join(res.stateDir!, 'tail'))).toBe(false);
  });
});

describe.concurrent('environment scrubbing', () => {
  test('secret-shaped names are withheld from the worker only, and named in env-withheld', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: {
        ANTIGRAVITY_PREFLIGHT: 'auto',
        GITHUB_TOKEN: 'ghp_secret',
        my_token: 'x',
        SSH_AUTH_SOCK: '/tmp/agent',
        AWS_REGION: 'eu-west-1',
        ANTIGRAVITY_API_KEY: 'kept',
        PRUN_KEEP_ENV: ' ssh_auth_sock , ',
      },
    });
    expect(res.code).toBe(0);
    expect(readState(res.stateDir, 'env-withheld')).toBe('AWS_REGION\nGITHUB_TOKEN\nmy_token\n');
    const worker = r.worker();
    for (const kept of ['ANTIGRAVITY_API_KEY', 'SSH_AUTH_SOCK', 'PRUN_KEEP_ENV', 'PATH']) expect(worker.envNames).toContain(kept);
    for (const dropped of ['GITHUB_TOKEN', 'my_token', 'AWS_REGION']) expect(worker.envNames).not.toContain(dropped);
    const version = r.calls().find((call) => call.kind === 'version')!;
    expect(version.envNames).toContain('GITHUB_TOKEN');
    expect(readFileSync(join(res.stateDir!, 'env-withheld'), 'utf8')).not.toContain('ghp_secret');
  });

  test('no env-withheld file when nothing was dropped', async ({ expect }) => {
    const r = root();
    const res = await r.run();
    expect(res.code).toBe(0);
    expect(existsSync(join(res.stateDir!, 'env-withheld'))).toBe(false);
  });
});

describe.concurrent('command line and settings', () => {
  test('unambiguous prefixes and --opt=value are accepted', async ({ expect }) => {
    const r = root();
    const res = await runNode([BIN, `--prompt=${r.prompt}`, '--res', r.result, '--unit', 'unit_a', '--mo=plan'], {
      env: { ...r.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off' },
      cwd: r.dir,
      timeoutMs: 30_000,
    });
    expect(res.code).toBe(0);
    expect(r.worker().argv).toContain('plan');
  });

  test('argparse-style errors exit 2 with usage and an empty stdout', async ({ expect }) => {
    const r = root();
    const cases: [string[], string][] = [
      [[], 'the following arguments are required: --prompt-file, --result-file, --unit-id'],
      [['--prompt-file', 'p', '--result-file', 'r', '--unit-id', 'u', '--bogus'], 'unrecognized arguments: --bogus'],
      [['--prompt-file', 'p', '--result-file', 'r', '--unit-id', 'u', '--mode', 'x'], "argument --mode: invalid choice: 'x'"],
      [['--prompt-file'], 'argument --prompt-file: expected one argument'],
    ];
    for (const [args, message] of cases) {
      const res = await runNode([BIN, ...args], { env: r.baseEnv(), cwd: r.dir, timeoutMs: 30_000 });
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain('usage: prun-dispatch-agy');
      expect(res.stderr).toContain(message);
    }
  });

  test('--help lists the exit codes and --version prints the version', async ({ expect }) => {
    const r = root();
    const help = await runNode([BIN, '--help'], { env: r.baseEnv(), cwd: r.dir, timeoutMs: 30_000 });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('exit codes:');
    expect(help.stdout).toContain('PRUN_AGY_SANDBOX=1');
    const version = await runNode([BIN, '--version'], { env: r.baseEnv(), cwd: r.dir, timeoutMs: 30_000 });
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  const validationCases: [Parameters<Root['run']>[0], string][] = [
    [{ args: ['--unit-id', 'a/b'] }, '--unit-id must contain only letters, digits, dashes, or underscores'],
    [{ env: { ANTIGRAVITY_DISPATCH_MODEL: '  ' } }, 'model and effort overrides must be non-empty'],
    [{ env: { ANTIGRAVITY_DISPATCH_EFFORT: '' } }, 'model and effort overrides must be non-empty'],
    [{ env: { ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '0' } }, 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer'],
    [{ env: { ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '1.5' } }, 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer'],
    [{ env: { PRUN_AGY_KILL_GRACE_SECONDS: 'soon' } }, 'PRUN_AGY_KILL_GRACE_SECONDS must be a non-negative number of seconds'],
    [{ env: { PRUN_AGY_SIGNAL_GRACE_SECONDS: '-1' } }, 'PRUN_AGY_SIGNAL_GRACE_SECONDS must be a non-negative number of seconds'],
  ];

  test('validation messages and exit codes before STATE-DIR', async ({ expect }) => {
    const r = root();
    // Every case is refused before anything is created, so they share the root and run at once.
    const missing = join(r.dir, 'nope.txt');
    const [notFound, results] = await Promise.all([
      runNode([BIN, '--prompt-file', 'nope.txt', '--result-file', 'r.md', '--unit-id', 'u', '--mode', 'plan'], {
        env: r.baseEnv(),
        cwd: r.dir,
        timeoutMs: 30_000,
      }),
      mapBounded(validationCases, DISPATCH_PARALLEL - 1, ([options]) => r.run(options)),
    ]);
    for (const [index, [, message]] of validationCases.entries()) {
      const res = results[index]!;
      expect(res.code, message).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.stderr).toBe(`dispatch-task-agy: ${message}\n`);
    }
    expect(notFound.code).toBe(2);
    expect(notFound.stderr).toBe(`dispatch-task-agy: prompt file not found: ${missing}\n`);
    expect(r.stateDirs()).toHaveLength(0);
    expect(r.calls()).toHaveLength(0);
  }, loopTimeoutMs(validationCases.length + 1));

  test('Python int() spellings of the timeout are accepted', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: ' +1_000 ' } });
    expect(res.code).toBe(0);
    expect(r.worker().argv.join(' ')).toContain('--print-timeout 1000s');
  });

  test('an invalid ANTIGRAVITY_PREFLIGHT is exit 2 after STATE-DIR with a FALLBACK', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'Sometimes' } });
    expect(res.code).toBe(2);
    expect(res.stdout).toMatch(/^STATE-DIR /);
    expect(readFileSync(r.result, 'utf8')).toContain('ANTIGRAVITY_PREFLIGHT must be auto, force, or off (got: sometimes)');
    const res2 = await r.run({
      resultPath: join(r.dir, 'r2.md'),
      env: { ANTIGRAVITY_PREFLIGHT: 'force', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: 'x' },
    });
    expect(res2.code).toBe(2);
    expect(readFileSync(join(r.dir, 'r2.md'), 'utf8')).toContain('ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS must be a positive integer');
  });

  test('preflight output is captured in text mode (CRLF and CR become LF) before it lands in preflight-tail', async ({ expect }) => {
    const r = root();
    const res = await r.run({
      env: { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_VERSION: 'Antigravity CLI 1.2.0\r\n', FAKE_AGY_MODELS: 'gemini-3.8-flash-high\r\rother-model' },
    });
    expect(res.code).toBe(0);
    expect(readState(res.stateDir, 'preflight-tail')).toBe('Antigravity CLI 1.2.0\n\n\ngemini-3.8-flash-high\n\nother-model\n\n');
  });

  test('--version and models run at once, and the worker starts only after both', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_VERSION_DELAY_MS: '3000', FAKE_AGY_MODELS_DELAY_MS: '3000' } });
    expect(res.code).toBe(0);
    const started = (kind: string): number => r.calls().find((call) => call.kind === kind)!.time;
    // One after the other, models would start 3 s after --version (and the worker 6 s after it).
    expect(Math.abs(started('models') - started('version'))).toBeLessThan(3000);
    expect(started('worker') - Math.max(started('version'), started('models'))).toBeGreaterThanOrEqual(3000);
    expect(readState(res.stateDir, 'preflight-tail')).toBe('Antigravity CLI 1.2.0\n\n\ngemini-3.8-flash-high\n\n');
  });

  test('a failing --version still refuses before any worker starts, with only its output, and the listing is killed', async ({ expect }) => {
    const r = root();
    const pidFile = join(r.dir, 'pids');
    const res = await r.run({
      env: {
        ANTIGRAVITY_PREFLIGHT: 'auto',
        FAKE_AGY_VERSION_DELAY_MS: '2000',
        FAKE_AGY_VERSION_EXIT: '1',
        FAKE_AGY_VERSION_STDERR: 'broken install',
        FAKE_AGY_MODELS_HANG: '1',
        FAKE_AGY_PID_FILE: pidFile,
      },
    });
    expect(res.code).toBe(70);
    expect(res.stderr).toContain("Antigravity preflight failed; run 'agy' interactively and sign in");
    // As when models ran after --version: the tail holds --version's output alone.
    expect(readState(res.stateDir, 'preflight-tail')).toBe('\nbroken install\n');
    expect(r.workerCalls()).toHaveLength(0);
    expect(r.calls().map((call) => call.kind).sort()).toEqual(['models', 'version']);
    // The hanging listing was killed and awaited before the dispatcher ended.
    expect(pids(pidFile)).toHaveLength(2);
    for (const pid of pids(pidFile)) expect(processRunning(pid)).toBe(false);
  });

  test('a --version timeout wins over a listing that would have passed', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'auto', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '1', FAKE_AGY_VERSION_HANG: '1' } });
    expect(res.code).toBe(124);
    expect(res.stderr).toContain('dispatch-task-agy: preflight timed out after 1s\n');
    expect(readState(res.stateDir, 'preflight-tail')).toBe('');
    expect(r.workerCalls()).toHaveLength(0);
  });

  test('preflight timeout is 124 and preflight failure is 70', async ({ expect }) => {
    const r = root();
    const slow = await r.run({ env: { ANTIGRAVITY_PREFLIGHT: 'auto', ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '1', FAKE_AGY_MODELS_HANG: '1' } });
    expect(slow.code).toBe(124);
    expect(slow.stderr).toContain('dispatch-task-agy: preflight timed out after 1s\n');
    expect(readState(slow.stateDir, 'preflight-tail')).toBe('Antigravity CLI 1.2.0\n\n');
    const failing = await r.run({
      resultPath: join(r.dir, 'r2.md'),
      env: { ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_VERSION_EXIT: '1', FAKE_AGY_VERSION_STDERR: 'not signed in' },
    });
    expect(failing.code).toBe(70);
    expect(failing.stderr).toContain("Antigravity preflight failed; run 'agy' interactively and sign in");
    expect(readState(failing.stateDir, 'preflight-tail')).toBe('\nnot signed in\n');
    expect(r.workerCalls()).toHaveLength(0);
  });

  test('an explicit effort that contradicts the tier is passed through and agy rejects it', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { ANTIGRAVITY_DISPATCH_EFFORT: 'high', FAKE_AGY_MODELS: 'gemini-3.9-flash-medium' } });
    expect(res.code).toBe(2);
    expect(res.stdout).toMatch(/^STATE-DIR /);
    expect(readFileSync(r.result, 'utf8')).toContain('Agy exited with code 2');
    expect(res.stderr).toContain('conflicts with --effort=high');
  });

  test('a prompt the worker never reads is a stdin failure: exit 70, recorded in the stderr capture', async ({ expect }) => {
    const r = root();
    writeFileSync(r.prompt, 'x'.repeat(512 * 1024));
    const res = await r.run({ env: { ANTIGRAVITY_DISPATCH_EFFORT: 'low' } });
    expect(res.code).toBe(70);
    expect(readState(res.stateDir, 'tail.stderr-tmp')).toMatch(/stdin failure: .*EPIPE/);
    expect(readFileSync(r.result, 'utf8')).toContain('Agy exited with code 70');
  });

  test('a response under 20 bytes is not published as a result', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_RESPONSE: '  nineteen bytes....  ' } });
    expect(res.code).toBe(70);
    expect(readFileSync(r.result, 'utf8')).toContain('Agy returned an implausibly short final response');
    const r2 = root();
    const ok = await r2.run({ env: { FAKE_AGY_RESPONSE: '\n twenty bytes exactly\n\n' } });
    expect(ok.code).toBe(0);
    expect(readFileSync(r2.result, 'utf8')).toBe('twenty bytes exactly\n');
  });

  test('the stdin line is Python json.dumps with raw non-ASCII, and the relay is stored', async ({ expect }) => {
    const r = root();
    writeFileSync(r.prompt, 'Prüfe "Abschnitt" 3 — ✓\r\nzweite Zeile\t\r\n\n');
    const res = await r.run();
    expect(res.code).toBe(0);
    const relay = readState(res.stateDir, 'prompt-relay');
    expect(relay).toContain('--- UNIT REQUEST ---\nPrüfe "Abschnitt" 3 — ✓\nzweite Zeile\n--- END UNIT REQUEST ---\n');
    expect(relay).toContain('# unit_a result\nConclusion: <one line>\nFiles: <files created or modified, or none>\n');
    expect(r.worker().stdin).toBe(`{"event": "user", "message": {"content": ${JSON.stringify(relay)}}}`);
    expect(r.worker().stdin).toContain('Prüfe \\"Abschnitt\\" 3 — ✓');
  });

  test('the result directory and a missing PRUN_SCRATCH_CWD are created; tails are echoed on stderr', async ({ expect }) => {
    const r = root();
    const scratch = join(r.dir, 'new-scratch');
    const result = join(r.dir, 'deep', 'er', 'r.md');
    const res = await r.run({ resultPath: result, env: { PRUN_SCRATCH_CWD: scratch, FAKE_AGY_STDERR: 'agy warning line' } });
    expect(res.code).toBe(0);
    expect(r.worker().cwd).toBe(scratch);
    expect(existsSync(result)).toBe(true);
    expect(readState(res.stateDir, 'result-file')).toBe(`${result}\n`);
    expect(res.stderr).toMatch(/Verification: mock\\n"\}\}\nagy warning line\n$/);
  });

  test('stderr echoes the last 80 lines of the tail; the FALLBACK keeps the whole capture', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_EXTRA_LINES: '100', FAKE_AGY_EXIT: '3' } });
    expect(res.code).toBe(3);
    // init + 100 progress lines + result: the echo starts at progress line 22.
    expect(res.stderr).toContain('"progress 22 of 100"');
    expect(res.stderr).not.toContain('"progress 21 of 100"');
    expect(readFileSync(r.result, 'utf8')).toContain('"progress 1 of 100"');
  });

  test('worker-wrote means size > 0: a 0-byte file is overwritten, a 1-byte file wins', async ({ expect }) => {
    const empty = root();
    const res = await empty.run({ env: { FAKE_AGY_WRITE_RESULT: empty.result, FAKE_AGY_WORKER_TEXT: '' } });
    expect(res.code).toBe(0);
    expect(readFileSync(empty.result, 'utf8')).toContain('Conclusion: complete');
    expect(existsSync(join(empty.dir, 'unit-result.response.md'))).toBe(false);
    const tiny = root();
    const kept = await tiny.run({ env: { FAKE_AGY_WRITE_RESULT: tiny.result, FAKE_AGY_WORKER_TEXT: 'x' } });
    expect(kept.code).toBe(0);
    expect(readFileSync(tiny.result, 'utf8')).toBe('x');
    expect(readFileSync(join(tiny.dir, 'unit-result.response.md'), 'utf8')).toContain('Conclusion: complete\n');
  });

  test('conversation-id holds the id unstripped; --continue-from strips it', async ({ expect }) => {
    const r = root();
    const first = await r.run({ env: { FAKE_AGY_CONVERSATION_ID: ' conv-spaced\t' } });
    expect(first.code).toBe(0);
    expect(readState(first.stateDir, 'conversation-id')).toBe(' conv-spaced\t\n');
    const second = await r.run({ resultPath: join(r.dir, 'second.md'), args: ['--continue-from', first.stateDir!] });
    expect(second.code).toBe(0);
    const argv = r.workerCalls()[1]!.argv;
    expect(argv.slice(argv.indexOf('--conversation'))).toEqual(['--conversation', 'conv-spaced']);
  });

  test('a result path that is a dangling symlink is published at its target; the link stays', async ({ expect }) => {
    const r = root();
    const target = join(r.dir, 'out', 'target.md');
    const link = join(r.dir, 'link.md');
    symlinkSync(target, link);
    const res = await r.run({ resultPath: link });
    expect(res.code).toBe(0);
    expect(readState(res.stateDir, 'result-file')).toBe(`${target}\n`);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toContain('Conclusion: complete');
  });

  test('the FALLBACK and the echo read the captures in text mode: CR and CRLF become line ends', async ({ expect }) => {
    const r = root();
    const res = await r.run({ env: { FAKE_AGY_STDERR: 'spin 1\rspin 2\r\nform\ffeed', FAKE_AGY_EXIT: '3' } });
    expect(res.code).toBe(3);
    expect(readFileSync(r.result, 'utf8')).toContain('## stderr\n\n```text\nspin 1\nspin 2\nform\ffeed\n```\n');
    expect(res.stderr.endsWith('\nspin 1\nspin 2\nform\nfeed\n')).toBe(true);
  });

  test('the state directory name and files follow the contract', async ({ expect }) => {
    const r = root();
    const res = await r.run();
    expect(res.stateDir!.startsWith(`${r.dir}/prun-task-`)).toBe(true);
    expect(res.stateDir).toMatch(/\/prun-task-[0-9a-f]{8}-unit_a-\d+-[0-9a-f]{16}$/);
    expect(readState(res.stateDir, 'pre-mtime')).toBe('0\n');
    expect(readState(res.stateDir, 'timestamp')).toMatch(/^\d+\n$/);
    expect(readState(res.stateDir, 'runtime')).toBe(`${process.execPath}\n`);
    const pid = Number(readState(res.stateDir, 'dispatch-pid'));
    expect(res.stateDir).toContain(`-unit_a-${pid}-`);
    expect(readState(res.stateDir, 'worker-pid-unverified')).toBe(`${r.worker().pid}\n`);
  });
});
