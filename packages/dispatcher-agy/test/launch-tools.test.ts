/**
 * What each unit's launch chain costs to start. Its programs (setpriv, unshare, perl) are found
 * on PATH once, when the launch plan is made, and every link of the chain is exec'd by absolute
 * path; the state records keep the programs' names. Where PATH could find another file from the
 * unit's directory (a relative entry) the names stay bare and each exec searches, as before. The
 * perl launcher and init compile without loading any module file; the keeper's prctl number comes
 * from the plan (perl's Config, asked once), not from loading Config at every start.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import {
  HELPER_REPORT_FD,
  HELPER_SCRIPT,
  INIT_SCRIPT,
  LAUNCHER_SCRIPT,
  NAMESPACE_LAUNCHER_SCRIPT,
  helperArgv,
  helperLaunch,
  initHeader,
  isolatedChainArgv,
  isolationRecord,
  launchArgv,
  parentDeathOf,
  perlNamespaceFromElf,
  perlPrctlFromElf,
  planLaunch,
  prctlSyscallFor,
  resolveLaunchTools,
  type LaunchPlan,
} from '../src/isolation.js';
import { agyWithStep, processRunning, readState, rootPool, waitFor } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const tools = resolveLaunchTools({ PATH });
const found = isAbsolute(tools.setpriv) && isAbsolute(tools.unshare) && isAbsolute(tools.perl);
const namespace = planLaunch('auto', process.platform, process.getuid?.() === 0);
const noNamespace = namespace.isolation.kind === 'pid' ? null : namespace.isolation.reason;
/** prctl's number for this perl (0: not Linux, no perl, or not known). */
const prctl = process.platform === 'linux' && isAbsolute(tools.perl) ? (planLaunch('off', process.platform, false, undefined, tools).prctlSyscall ?? 0) : 0;

describe('resolveLaunchTools', () => {
  test.skipIf(!found)(`finds each program where PATH does${found ? '' : ' (skipped: setpriv, unshare or perl is not on PATH)'}`, () => {
    for (const [name, path] of Object.entries(tools)) {
      expect(path.endsWith(`/${name}`)).toBe(true);
      expect(PATH.split(':')).toContain(path.slice(0, -name.length - 1));
    }
  });

  test('keeps bare names for a PATH with a relative or empty entry, an empty or unset PATH, and a program not found', () => {
    const bare = { setpriv: 'setpriv', unshare: 'unshare', perl: 'perl' };
    expect(resolveLaunchTools({ PATH: `bin:${PATH}` })).toEqual(bare);
    expect(resolveLaunchTools({ PATH: `${PATH}:` })).toEqual(bare);
    expect(resolveLaunchTools({ PATH: '' })).toEqual(bare);
    expect(resolveLaunchTools({})).toEqual(bare);
    expect(resolveLaunchTools({ PATH: '/nonexistent-prun-dir' })).toEqual(bare);
  });
});

describe('the perl launcher and init', () => {
  // Each module is a file perl finds, reads and compiles at every start of every unit's chain:
  // `$!{EINTR}` alone made the launcher load Errno, Exporter and strict (about 3 ms of CPU).
  test.skipIf(!isAbsolute(tools.perl))(`load no module while they compile${isAbsolute(tools.perl) ? '' : ' (skipped: no perl on PATH)'}`, () => {
    for (const script of [LAUNCHER_SCRIPT, INIT_SCRIPT]) {
      // Without fd 3 each exits at once (120), after compiling all of itself; END reports %INC.
      const probe = spawnSync(tools.perl, ['-e', `END { print STDERR "loaded:", join(",", sort keys %INC), "\\n" }\n${script}`], {
        stdio: ['ignore', 'ignore', 'pipe'],
        encoding: 'utf8',
      });
      expect(probe.status).toBe(120);
      expect(probe.stderr).toBe('loaded:\n');
    }
  });

  // The launcher that arms its own parent-death signal (no setpriv) can be forked, and its
  // dispatcher die, before its prctl: the kernel then never sends the signal, so the launcher
  // must see that its parent is no longer the dispatcher and start nothing. Made to happen every
  // time: the launcher's process stops itself before its exec and is let go once its parent
  // (standing in for the dispatcher) is dead.
  test.skipIf(prctl === 0)(
    `armed after its dispatcher died, starts nothing${prctl === 0 ? ' (skipped: not Linux, no perl, or prctl unknown here)' : ''}`,
    async () => {
      const dir = pool.root().dir;
      const started = join(dir, 'started');
      // The parent: forks the launcher-to-be, which ignores the SIGHUP its orphaned, stopped
      // process group gets and stops itself; the parent prints its pid once it has stopped.
      const parentScript = [
        's/^PARENT$/$$/ for @ARGV;',
        'my $pid = fork();',
        'if ($pid == 0) { $SIG{HUP} = "IGNORE"; kill("STOP", $$); exec { $ARGV[0] } @ARGV; exit 126; }',
        'waitpid($pid, 2);', // WUNTRACED
        '$| = 1; print "$pid\\n";',
        'waitpid($pid, 0);',
      ].join('\n');
      const launcher = [tools.perl, '-e', LAUNCHER_SCRIPT, '--', 'PARENT', dir, String(prctl), '15', '0', '/bin/sh', '-c', `echo started > "${started}"; exec sleep 30`];
      const parent = spawn(tools.perl, ['-e', parentScript, '--', ...launcher], { stdio: ['ignore', 'pipe', 'ignore', 'pipe'] });
      const status: Buffer[] = [];
      parent.stdio[3]!.on('data', (chunk: Buffer) => status.push(chunk));
      // Every end of the pipes: the parent and the launcher (and anything it started) are gone.
      const closed = new Promise<void>((resolve) => parent.on('close', () => resolve()));
      const child = await new Promise<number>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
      parent.kill('SIGKILL');
      await new Promise((resolve) => parent.once('exit', resolve));
      process.kill(child, 'SIGCONT');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), 10_000)));
      const outcome = await Promise.race([closed.then(() => 'closed' as const), late]).finally(() => clearTimeout(timer));
      if (outcome === 'late') {
        // Started after all: end what it started before failing.
        try {
          process.kill(child, 'SIGKILL');
        } catch {
          // gone
        }
      }
      expect(outcome).toBe('closed');
      // Not even the lock was taken (`locked` comes first), and the command never ran.
      expect(Buffer.concat(status).toString()).toBe('');
      expect(existsSync(started)).toBe(false);
    },
  );
});

describe('the init, parked', () => {
  // The init reads its directory and command from the stdin agy inherits: it must take exactly
  // the header's bytes and leave the prompt that follows for agy (a buffered read would eat it).
  // It is given prctl's number, so it drops its (this test's) capabilities itself before `ready`.
  test.skipIf(prctl === 0)(`says ready, then runs the command in the directory with the rest of stdin${prctl === 0 ? ' (skipped: no perl, or prctl unknown)' : ''}`, () => {
    const dir = pool.root().dir;
    const prompt = '{"event": "user", "message": {"content": "the prompt"}}\n'.repeat(200);
    const input = Buffer.concat([initHeader(dir, ['/bin/sh', '-c', 'pwd; cat']), Buffer.from(prompt)]);
    // fd 3 is the status pipe: here the same pipe as stderr.
    const run = spawnSync(tools.perl, ['-e', INIT_SCRIPT, '--', String(prctl)], { input, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`${dir}\n${prompt}`);
    expect((run.output[3] as unknown as string).split('\n')).toEqual(['ready', 'locked', 'started', 'exit 0', '']);
  });

  test.skipIf(prctl === 0)(`ends without starting anything when its stdin ends first${prctl === 0 ? ' (skipped: no perl, or prctl unknown)' : ''}`, () => {
    const run = spawnSync(tools.perl, ['-e', INIT_SCRIPT, '--', String(prctl)], { input: '', stdio: ['pipe', 'pipe', 'pipe', 'pipe'], encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.output[3]).toBe('ready\n');
  });
});

describe('launchArgv', () => {
  const located = { setpriv: '/opt/u/setpriv', unshare: '/opt/u/unshare', perl: '/opt/p/perl' };
  const input = { dispatcherPid: 4242, lockDir: '/tmp/work', command: ['/bin/agy', '--mode', 'plan'] };
  const isolated: LaunchPlan = {
    isolation: { kind: 'pid', unshare: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'] },
    parentDeath: true,
    launcher: true,
    tools: located,
  };

  test('execs every link of an isolated chain by the path the plan found, and records the names', () => {
    // No directory and no command: the init reads both on stdin (initHeader), once it is ready.
    expect(launchArgv(isolated, input)).toEqual([
      '/opt/u/setpriv', '--pdeathsig', 'KILL', '--',
      '/opt/p/perl', '-e', LAUNCHER_SCRIPT, '--', '4242', '', '0', '0', '16',
      '/opt/u/unshare', '--pid', '--fork', '--mount-proc', '--kill-child', '--',
      '/opt/u/setpriv', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--',
      // The init's argument: 0, setpriv dropped the capabilities (it only checks they are gone).
      '/opt/p/perl', '-e', INIT_SCRIPT, '--', '0',
    ]);
    expect(isolatedChainArgv(isolated, 4242)).toEqual(launchArgv(isolated, input));
    expect(initHeader('/tmp/work', input.command).toString('utf8')).toBe('30\n/tmp/work\0/bin/agy\0--mode\0plan');
    expect(isolationRecord(isolated)).toBe(
      'isolation: pid\nmechanism: unshare --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: setpriv --pdeathsig KILL\ndirectory-lock: flock\n',
    );
  });

  test('execs the keeper chain by path too, and a plan without tools by name', () => {
    const keeper: LaunchPlan = { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, parentDeath: true, launcher: true, tools: located, prctlSyscall: 157 };
    const argv = launchArgv(keeper, input);
    expect(argv.slice(0, 6)).toEqual(['/opt/u/setpriv', '--pdeathsig', 'TERM', '--', '/opt/p/perl', '-e']);
    // The keeper gets prctl's number (setpriv armed the parent-death signal: none to arm); no wrapper.
    expect(argv.slice(7)).toEqual(['--', '4242', '/tmp/work', '157', '0', '0', '/bin/agy', '--mode', 'plan']);
    const { tools: _, ...byName } = isolated;
    const bare = launchArgv(byName, input);
    expect([bare[0], bare[4], bare[13], bare[19], bare[24]]).toEqual(['setpriv', 'perl', 'unshare', 'setpriv', 'perl']);
  });

  // review17: with perl but no working `setpriv --pdeathsig`, a kill -9 of the dispatcher left
  // the chain running; the launcher now arms the signal itself with prctl's number.
  test('without setpriv the launcher arms the parent-death signal itself: TERM for the keeper, KILL for unshare', () => {
    const keeper: LaunchPlan = { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, parentDeath: false, launcher: true, tools: located, prctlSyscall: 157 };
    expect(launchArgv(keeper, input)).toEqual(['/opt/p/perl', '-e', LAUNCHER_SCRIPT, '--', '4242', '/tmp/work', '157', '15', '0', '/bin/agy', '--mode', 'plan']);
    expect(parentDeathOf(keeper)).toEqual({ by: 'prctl', signal: 'TERM' });
    expect(isolationRecord(keeper)).toBe('isolation: none\nreason: PRUN_ISOLATE=off\nparent-death: prctl PR_SET_PDEATHSIG TERM\ndirectory-lock: flock\n');

    const oldSetpriv: LaunchPlan = { ...isolated, parentDeath: false, prctlSyscall: 167 };
    const argv = isolatedChainArgv(oldSetpriv, 4242);
    expect(argv.slice(0, 3)).toEqual(['/opt/p/perl', '-e', LAUNCHER_SCRIPT]);
    expect(argv.slice(3, 9)).toEqual(['--', '4242', '', '167', '9', '16']);
    expect(argv[9]).toBe('/opt/u/unshare');
    expect(isolationRecord(oldSetpriv)).toBe(
      'isolation: pid\nmechanism: unshare --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n',
    );
  });

  test('a launcher that makes the namespace itself is the whole chain up to agy: one perl, no unshare; the record says so', () => {
    const own: LaunchPlan = {
      isolation: { kind: 'pid', unshare: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'], initDrops: true, byLauncher: { unshare: 272, mount: 165 } },
      parentDeath: false,
      launcher: true,
      tools: located,
      prctlSyscall: 157,
    };
    // The launcher's words (no directory, SIGKILL armed by prctl, N 0), then unshare(2)'s and mount(2)'s numbers, no user namespace.
    expect(isolatedChainArgv(own, 4242)).toEqual(['/opt/p/perl', '-e', NAMESPACE_LAUNCHER_SCRIPT, '--', '4242', '', '157', '9', '0', '272', '165', '0']);
    expect(launchArgv(own, input)).toEqual(isolatedChainArgv(own, 4242));
    expect(isolationRecord(own)).toBe(
      'isolation: pid\nmechanism: perl unshare(2) --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n',
    );
    const user: LaunchPlan = { ...own, isolation: { kind: 'pid', unshare: ['unshare', '--user', '--map-current-user', '--pid', '--fork', '--mount-proc', '--kill-child'], initDrops: true, byLauncher: { unshare: 272, mount: 165 } } };
    expect(isolatedChainArgv(user, 4242).slice(-3)).toEqual(['272', '165', '1']);
    expect(isolationRecord(user)).toMatch(/^isolation: pid\nmechanism: perl unshare\(2\) --user --map-current-user --pid --fork --mount-proc --kill-child\ncapabilities: none\n/);
  });

  test("an architecture whose prctl number is not known, or no perl, keeps the honest 'parent-death: none'", () => {
    const unknown: LaunchPlan = { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, parentDeath: false, launcher: true, tools: located, prctlSyscall: 0 };
    expect(parentDeathOf(unknown)).toBeNull();
    expect(launchArgv(unknown, input).slice(3, 9)).toEqual(['--', '4242', '/tmp/work', '0', '0', '0']);
    expect(isolationRecord(unknown)).toBe('isolation: none\nreason: PRUN_ISOLATE=off\nparent-death: none\ndirectory-lock: flock\n');
    const { prctlSyscall: _, ...absent } = unknown;
    expect(parentDeathOf(absent)).toBeNull();
    const noPerl: LaunchPlan = { isolation: { kind: 'none', reason: 'perl is not on PATH (it runs the namespace init)' }, parentDeath: false, launcher: false, prctlSyscall: 157 };
    expect(parentDeathOf(noPerl)).toBeNull();
    expect(launchArgv(noPerl, input)).toEqual(input.command);
    expect(isolationRecord(noPerl)).toBe('isolation: none\nreason: perl is not on PATH (it runs the namespace init)\nparent-death: none\ndirectory-lock: none\n');
    // setpriv's values stay byte for byte.
    expect(isolationRecord({ ...unknown, parentDeath: true })).toBe('isolation: none\nreason: PRUN_ISOLATE=off\nparent-death: setpriv --pdeathsig TERM\ndirectory-lock: flock\n');
  });
});

// review17's rest: the preflight's and the quota refresh's helpers were wrapped only under a
// setpriv that arms the parent-death signal; without one they ran bare and outlived a killed
// dispatcher (orphans.test.ts kills it while each hangs).
describe('helperArgv', () => {
  const located = { setpriv: '/opt/u/setpriv', unshare: '/opt/u/unshare', perl: '/opt/p/perl' };
  const command = ['/bin/agy', '--version'];
  const keeper: LaunchPlan = { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, parentDeath: true, launcher: true, tools: located, prctlSyscall: 157 };
  const isolated: LaunchPlan = { ...keeper, isolation: { kind: 'pid', unshare: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'] } };

  test('under setpriv --pdeathsig KILL where setpriv arms it, by the path the plan found (the keeper chain gets TERM, a helper KILL)', () => {
    expect(helperArgv(keeper, command, 4242)).toEqual(['/opt/u/setpriv', '--pdeathsig', 'KILL', '--', '/bin/agy', '--version']);
    expect(helperArgv(isolated, command, 4242)).toEqual(helperArgv(keeper, command, 4242));
    const { tools: _, ...byName } = keeper;
    expect(helperArgv(byName, command, 4242)[0]).toBe('setpriv');
  });

  test("without such a setpriv, under the perl wrapper with the dispatcher's pid and prctl's number", () => {
    for (const plan of [{ ...keeper, parentDeath: false }, { ...isolated, parentDeath: false }]) {
      expect(helperArgv(plan, command, 4242)).toEqual(['/opt/p/perl', '-e', HELPER_SCRIPT, '--', '4242', '157', '0', '/bin/agy', '--version']);
      // The preflight's: a failed exec reported on fd 3, read back as a bare spawn's error.
      const reporting = helperLaunch(plan, command, 4242, true);
      expect(reporting.argv).toEqual(['/opt/p/perl', '-e', HELPER_SCRIPT, '--', '4242', '157', String(HELPER_REPORT_FD), '/bin/agy', '--version']);
      expect(HELPER_REPORT_FD).toBe(3);
      expect(reporting.execFailure?.('13')).toBe('spawn /bin/agy EACCES');
      expect(reporting.execFailure?.('2')).toBe('spawn /bin/agy ENOENT');
      expect(reporting.execFailure?.('')).toBeNull();
      expect(helperLaunch(plan, command, 4242).execFailure).toBeNull();
    }
  });

  test('bare where nothing can bind it: prctl not known, no perl, or no plan yet', () => {
    expect(helperArgv({ ...keeper, parentDeath: false, prctlSyscall: 0 }, command, 4242)).toEqual(command);
    expect(helperArgv({ ...keeper, parentDeath: false, launcher: false }, command, 4242)).toEqual(command);
    expect(helperArgv(null, command, 4242)).toEqual(command);
    // Only the perl wrapper reports on fd 3: no other is given that pipe.
    for (const plan of [keeper, { ...keeper, parentDeath: false, prctlSyscall: 0 }, null]) expect(helperLaunch(plan, command, 4242, true).execFailure).toBeNull();
  });
});

describe.skipIf(prctl === 0)(`the helper wrapper${prctl === 0 ? ' (skipped: not Linux, no perl, or prctl unknown here)' : ''}`, () => {
  const wrapped = (dispatcherPid: number, argv: readonly string[], script = HELPER_SCRIPT) =>
    spawnSync(tools.perl, ['-e', script, '--', String(dispatcherPid), String(prctl), '0', ...argv], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  /** With the report pipe on fd 3, as the preflight runs it. */
  const reporting = (argv: readonly string[]) =>
    spawnSync(tools.perl, ['-e', HELPER_SCRIPT, '--', String(process.pid), String(prctl), '3', ...argv], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], encoding: 'utf8' });

  test('execs the command in its own process (the pid the dispatcher holds), loading no module', () => {
    const run = wrapped(process.pid, ['/bin/sh', '-c', 'echo "$$ $PPID"']);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`${run.pid} ${process.pid}\n`);
    const modules = wrapped(process.pid, ['/nonexistent-prun/agy'], `END { print STDERR "loaded:", join(",", sort keys %INC), "\\n" }\n${HELPER_SCRIPT}`);
    expect(modules.stderr.split('\n').at(-2)).toBe('loaded:');
  });

  // run.ts and quota judge a wrapped helper's failed exec as setpriv's: the same status, the reason on stderr.
  test("fails an exec as setpriv does: 127 for a missing file, 126 for one it may not run, the reason on stderr", () => {
    const dir = pool.root().dir;
    const notExecutable = join(dir, 'agy');
    writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    const missing = wrapped(process.pid, ['/nonexistent-prun/agy', '--version']);
    expect([missing.status, missing.stdout, missing.stderr]).toEqual([127, '', 'failed to execute /nonexistent-prun/agy: No such file or directory\n']);
    const refused = wrapped(process.pid, [notExecutable, '--version']);
    expect([refused.status, refused.stderr]).toEqual([126, `failed to execute ${notExecutable}: Permission denied\n`]);
    if (isAbsolute(tools.setpriv)) {
      const statuses = [['/nonexistent-prun/agy'], [notExecutable]].map((argv) => spawnSync(tools.setpriv, ['--pdeathsig', 'KILL', '--', ...argv], { stdio: 'ignore' }).status);
      expect(statuses).toEqual([127, 126]);
    }
  });

  test('with the report pipe, writes a failed exec\'s errno on it, and a command it started does not hold it', () => {
    const missing = reporting(['/nonexistent-prun/agy']);
    expect([missing.status, missing.output[3]]).toEqual([127, '2']);
    const started = reporting(['/bin/sh', '-c', 'if [ -e /dev/fd/3 ]; then echo open; else echo closed; fi']);
    expect([started.status, started.stdout, started.output[3]]).toEqual([0, 'closed\n', '']);
  });

  // The record must not say a helper is bound when the kernel did not arm it: a wrong number
  // (or a filter that refuses prctl) leaves the signal unset, and the wrapper then runs nothing.
  test('whose parent-death signal does not read back as armed runs nothing', () => {
    const started = join(pool.root().dir, 'started');
    const run = spawnSync(tools.perl, ['-e', HELPER_SCRIPT, '--', String(process.pid), '100000', '0', '/bin/sh', '-c', `echo started > "${started}"`], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    expect([run.status, run.stderr]).toEqual([121, 'parent-death signal not armed (reads back as 0)\n']);
    expect(existsSync(started)).toBe(false);
  });

  // Armed too late (its dispatcher died first) the signal never comes: the wrapper must see that
  // its parent is not the dispatcher and run nothing. A pid that is not its parent stands in.
  test('whose parent is not the dispatcher runs nothing', () => {
    const started = join(pool.root().dir, 'started');
    const run = wrapped(1, ['/bin/sh', '-c', `echo started > "${started}"`]);
    expect(run.status).toBe(121);
    expect(existsSync(started)).toBe(false);
  });
});

describe('prctlSyscallFor', () => {
  test('maps perl archnames to prctl numbers, 0 for any other', () => {
    expect(prctlSyscallFor('x86_64-linux-gnu-thread-multi')).toBe(157);
    expect(prctlSyscallFor('aarch64-linux-gnu-thread-multi\n')).toBe(167);
    expect(prctlSyscallFor('i686-linux-gnu-thread-multi-64int')).toBe(172);
    expect(prctlSyscallFor('powerpc64le-linux-gnu-thread-multi')).toBe(171);
    expect(prctlSyscallFor('mips64el-linux-gnuabi64')).toBe(0);
    expect(prctlSyscallFor('')).toBe(0);
    expect(prctlSyscallFor('constructor')).toBe(0);
  });

  test.skipIf(!isAbsolute(tools.perl))(`of this perl is what the plan without isolation carries${isAbsolute(tools.perl) ? '' : ' (skipped: no perl)'}`, () => {
    const keeper = planLaunch('off', process.platform, process.getuid?.() === 0, undefined, tools);
    expect(keeper.launcher).toBe(true);
    const expected = { x64: 157, arm64: 167, riscv64: 167, loong64: 167, ia32: 172, arm: 172, s390x: 172 }[process.arch as string];
    if (expected !== undefined) expect(keeper.prctlSyscall).toBe(expected);
    else expect(keeper.prctlSyscall).toBeGreaterThanOrEqual(0);
  });
});

describe('a dispatch', () => {
  // review: the keeper used to load Config at every start for this number; it now comes from the
  // plan, and a wrong or missing one would leave orphans to the host's init.
  test.skipIf(process.platform !== 'linux' || !isAbsolute(tools.perl))('without isolation, the keeper adopts the tree\'s orphans (it is a child subreaper) and kills them', async () => {
    const root = pool.root();
    const orphanFile = join(root.dir, 'orphan.pid');
    // A subshell starts a sleeper and exits at once: the sleeper is orphaned.
    const agy = agyWithStep(join(root.dir, 'agy-orphan'), `( sleep 300 & echo $! > "${orphanFile}.tmp"; mv "${orphanFile}.tmp" "${orphanFile}" )`);
    let dispatcher = 0;
    const running = root.run({ env: { PRUN_ISOLATE: 'off', ANTIGRAVITY_BIN: agy, FAKE_AGY_HANG: '1' }, onSpawn: (pid) => (dispatcher = pid) });
    let stateDir = '';
    await waitFor(
      () => {
        const [name] = root.stateDirs();
        stateDir = name === undefined ? '' : join(root.dir, name);
        return existsSync(orphanFile) && stateDir !== '' && existsSync(join(stateDir, 'worker-pid-unverified')) && readState(stateDir, 'worker-pid-unverified').trim() !== '';
      },
      15_000,
      'worker and orphan started',
    );
    const parentOf = (pid: number): number => Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    const orphan = Number(readFileSync(orphanFile, 'utf8'));
    const agyPid = Number(readState(stateDir, 'worker-pid-unverified'));
    const keeper = parentOf(agyPid);
    try {
      // The orphan's parent is agy's keeper, not the host's init or another subreaper.
      await waitFor(() => parentOf(orphan) === keeper, 5_000, `orphan ${orphan} adopted by the keeper ${keeper} (its parent: ${parentOf(orphan)})`);
      process.kill(dispatcher, 'SIGTERM');
      await running;
      await waitFor(() => !processRunning(orphan), 5_000, 'orphan killed with the tree');
    } finally {
      // A failed check must not leave the sleeper behind (nobody else would reap it).
      if (processRunning(orphan)) process.kill(orphan, 'SIGKILL');
      if (processRunning(dispatcher)) process.kill(dispatcher, 'SIGKILL');
      await running;
    }
  });

  test.skipIf(noNamespace !== null || !found)(
    `runs its isolated chain from absolute paths${noNamespace ? ` (skipped: ${noNamespace})` : found ? '' : ' (skipped: a chain program is not on PATH)'}`,
    async () => {
      const root = pool.root();
      let dispatcher = 0;
      const running = root.run({ env: { PRUN_ISOLATE: 'pid', FAKE_AGY_HANG: '1' }, onSpawn: (pid) => (dispatcher = pid) });
      let stateDir = '';
      await waitFor(
        () => {
          const [name] = root.stateDirs();
          stateDir = name === undefined ? '' : join(root.dir, name);
          return stateDir !== '' && existsSync(join(stateDir, 'worker-pid-unverified')) && readState(stateDir, 'worker-pid-unverified').trim() !== '';
        },
        15_000,
        'worker started',
      );
      try {
        const leader = Number(readState(stateDir, 'worker-pid-unverified'));
        const argv = readFileSync(`/proc/${leader}/cmdline`, 'utf8').split('\0');
        if (perlPrctlFromElf(tools) > 0 && perlNamespaceFromElf(tools) !== null) {
          // The chain's leader is the launcher, which made the namespace itself (no unshare exec'd).
          expect(argv.slice(0, 3)).toEqual([tools.perl, '-e', NAMESPACE_LAUNCHER_SCRIPT]);
          expect(readState(stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: perl unshare\(2\) --/);
        } else {
          // The chain's leader is unshare by now (the launcher exec'd into it); where this perl's
          // ELF header gives prctl's number, the init follows it directly (no setpriv link).
          expect(argv[0]).toBe(tools.unshare);
          expect(argv.slice(argv.indexOf('--') + 1, argv.indexOf('--') + 2)).toEqual([perlPrctlFromElf(tools) > 0 ? tools.perl : tools.setpriv]);
          expect(argv).toContain(tools.perl);
          expect(readState(stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: unshare --/);
        }
      } finally {
        // A failed check must not leave the hanging dispatcher (and its chain) behind.
        process.kill(dispatcher, 'SIGTERM');
      }
      const run = await running;
      expect(run.stateDir).toBe(stateDir);
    },
  );
});
