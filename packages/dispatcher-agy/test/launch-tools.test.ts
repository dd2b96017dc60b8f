/**
 * What each unit's launch chain costs to start. Its programs (setpriv, unshare, perl) are found
 * on PATH once, when the launch plan is made, and every link of the chain is exec'd by absolute
 * path; the state records keep the programs' names. Where PATH could find another file from the
 * unit's directory (a relative entry) the names stay bare and each exec searches, as before. The
 * perl launcher and init compile without loading any module file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { INIT_SCRIPT, LAUNCHER_SCRIPT, isolationRecord, launchArgv, planLaunch, resolveLaunchTools, type LaunchPlan } from '../src/isolation.js';
import { readState, rootPool, waitFor } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const tools = resolveLaunchTools({ PATH });
const found = isAbsolute(tools.setpriv) && isAbsolute(tools.unshare) && isAbsolute(tools.perl);
const namespace = planLaunch('auto', process.platform, process.getuid?.() === 0);
const noNamespace = namespace.isolation.kind === 'pid' ? null : namespace.isolation.reason;

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
    expect(launchArgv(isolated, input)).toEqual([
      '/opt/u/setpriv', '--pdeathsig', 'KILL', '--',
      '/opt/p/perl', '-e', LAUNCHER_SCRIPT, '--', '4242', '/tmp/work', '15',
      '/opt/u/unshare', '--pid', '--fork', '--mount-proc', '--kill-child', '--',
      '/opt/u/setpriv', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--',
      '/opt/p/perl', '-e', INIT_SCRIPT, '--',
      '/bin/agy', '--mode', 'plan',
    ]);
    expect(isolationRecord(isolated)).toBe(
      'isolation: pid\nmechanism: unshare --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: setpriv --pdeathsig KILL\ndirectory-lock: flock\n',
    );
  });

  test('execs the keeper chain by path too, and a plan without tools by name', () => {
    const keeper: LaunchPlan = { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, parentDeath: true, launcher: true, tools: located };
    expect(launchArgv(keeper, input).slice(0, 6)).toEqual(['/opt/u/setpriv', '--pdeathsig', 'TERM', '--', '/opt/p/perl', '-e']);
    const { tools: _, ...byName } = isolated;
    const argv = launchArgv(byName, input);
    expect([argv[0], argv[4], argv[11], argv[17], argv[22]]).toEqual(['setpriv', 'perl', 'unshare', 'setpriv', 'perl']);
  });
});

describe('a dispatch', () => {
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
      // The chain's leader is unshare by now (setpriv and the launcher exec'd into it).
      const leader = Number(readState(stateDir, 'worker-pid-unverified'));
      const argv = readFileSync(`/proc/${leader}/cmdline`, 'utf8').split('\0');
      expect(argv[0]).toBe(tools.unshare);
      expect(argv.slice(argv.indexOf('--') + 1, argv.indexOf('--') + 2)).toEqual([tools.setpriv]);
      expect(argv).toContain(tools.perl);
      expect(readState(stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: unshare --/);
      process.kill(dispatcher, 'SIGTERM');
      const run = await running;
      expect(run.stateDir).toBe(stateDir);
    },
  );
});
