/**
 * The chain forker (forker.ts): a host that runs unit after unit forks each isolated chain from
 * one perl process instead of spawning a perl per chain. A forked chain must be what a spawned
 * one is: its worker gets exactly its own stdin (to its end, whatever other chain is parked
 * beside it), its output, its exit code or signal; and it must die with the host, however the
 * host dies. A forker that is gone ends its chains as killed, and chains are spawned again.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, onTestFinished, test } from 'vitest';
import { ChainForker, forkable } from '../src/forker.js';
import { cachedLaunchPlan, type LaunchPlan } from '../src/isolation.js';
import { WorkerProcess, type WorkerExit } from '../src/worker.js';
import { PACKAGE_DIR, processRunning, rootPool, waitFor } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const plan: LaunchPlan = await cachedLaunchPlan('auto', process.platform, process.getuid?.() === 0, process.env);
const skip = forkable(plan) ? false : 'this machine gives no one-perl isolated chain bound by prctl';

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Pids of the processes whose command line holds `marker`. */
function withMarker(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker) && processRunning(Number(name))) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function usableForker(): Promise<ChainForker> {
  const forker = new ChainForker(plan);
  await waitFor(() => forker.usable, 10_000, 'the chain forker to be ready');
  return forker;
}

interface Ran {
  exit: WorkerExit;
  stdout: string;
  stderr: string;
}

/** Give a parked chain its worker `command`, send `input`, and collect what it printed. */
async function run(chain: WorkerProcess, dir: string, command: string[], input: string): Promise<Ran> {
  chain.go(dir, command);
  expect(await chain.started).toEqual({ kind: 'started' });
  let stdout = '';
  let stderr = '';
  chain.pipeOutput(
    (chunk) => (stdout += chunk.toString()),
    (chunk) => (stderr += chunk.toString()),
  );
  chain.sendInput(input, () => undefined);
  return { exit: await chain.finished(), stdout, stderr };
}

describe.skipIf(skip)('the chain forker', () => {
  test('forks chains whose workers get their own stdin to its end, their output and their ends', async () => {
    const root = pool.root();
    const forker = await usableForker();
    const park = (): WorkerProcess => WorkerProcess.park({ plan, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, cwd: root.dir, dispatcherPid: process.pid }, osConstants.signals, forker);
    try {
      const a = park();
      // Its own process group as soon as the host has its pid (a stop may come at once).
      expect(() => process.kill(-a.pid, 0)).not.toThrow();
      const b = park();
      // Both came from the forker (a spawned chain's parent is this process), and both are ready.
      expect(parentOf(a.pid)).not.toBe(process.pid);
      expect(parentOf(b.pid)).toBe(parentOf(a.pid));
      expect((await a.ready).ok).toBe(true);
      expect((await b.ready).ok).toBe(true);
      // `cat` ends only at the end of its stdin: no other chain (b, parked after a) holds it open.
      const first = await run(a, root.dir, ['sh', '-c', 'cat; echo out; echo err >&2; exit 3'], 'the prompt\n');
      expect(first).toEqual({ exit: { code: 3, signal: null }, stdout: 'the prompt\nout\n', stderr: 'err\n' });
      const second = await run(b, root.dir, ['sh', '-c', 'kill -TERM $$'], '');
      expect(second.exit).toEqual({ code: null, signal: 'SIGTERM' });
      // The unit's environment exactly, a value with a newline included.
      const withEnv = WorkerProcess.park({ plan, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ODD: 'one\ntwo=three' }, cwd: root.dir, dispatcherPid: process.pid }, osConstants.signals, forker);
      expect((await withEnv.ready).ok).toBe(true);
      const shown = await run(withEnv, root.dir, ['sh', '-c', `printf '[%s]' "$ODD"; awk 'BEGIN { for (k in ENVIRON) print k }' | sort | grep -vx 'PWD\\|SHLVL\\|_' | tr '\\n' ' '`], '');
      expect(shown.stdout).toBe('[one\ntwo=three]ODD PATH ');
      // The chain's own end, without the init's report: its group killed, the forker's wait status read.
      const killed = park();
      expect((await killed.ready).ok).toBe(true);
      killed.pipeOutput(() => undefined, () => undefined);
      process.kill(-killed.pid, 'SIGKILL');
      expect(await killed.finished()).toEqual({ code: null, signal: 'SIGKILL' });
      // A chain that gets no worker is killed, and the forker lets it go.
      const c = park();
      expect((await c.ready).ok).toBe(true);
      const cPid = c.pid;
      c.abandon();
      await waitFor(() => !processRunning(cPid), 10_000, 'the abandoned chain to end');
    } finally {
      forker.close();
    }
    await forker.ended(5000);
  }, 60_000);

  test('a forker killed ends its chains as killed; chains are then spawned by the host', async () => {
    const root = pool.root();
    const forker = await usableForker();
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const chain = WorkerProcess.park({ plan, env, cwd: root.dir, dispatcherPid: process.pid }, osConstants.signals, forker);
    expect((await chain.ready).ok).toBe(true);
    const marker = `300.${process.pid}1`;
    chain.go(root.dir, ['sleep', marker]);
    expect(await chain.started).toEqual({ kind: 'started' });
    chain.pipeOutput(() => undefined, () => undefined);
    chain.sendInput('', () => undefined);
    await waitFor(() => withMarker(marker).length === 1, 10_000, 'the worker to run');
    process.kill(parentOf(chain.pid), 'SIGKILL');
    expect(await chain.finished()).toEqual({ code: null, signal: 'SIGKILL' });
    await waitFor(() => withMarker(marker).length === 0, 10_000, 'the worker to die with its forker');
    expect(forker.usable).toBe(false);
    const spawned = WorkerProcess.park({ plan, env, cwd: root.dir, dispatcherPid: process.pid }, osConstants.signals, forker);
    expect(parentOf(spawned.pid)).toBe(process.pid);
    expect((await spawned.ready).ok).toBe(true);
    spawned.abandon();
    forker.close();
  }, 60_000);

  test('a host killed with SIGKILL takes the forker and every chain with it', async () => {
    const root = pool.root();
    const marker = `300.${process.pid}2`;
    const host = join(root.dir, 'host.mjs');
    // The built modules, as a batch's supervisor runs them.
    writeFileSync(
      host,
      `import { cachedLaunchPlan } from ${JSON.stringify(join(PACKAGE_DIR, 'dist/isolation.js'))};
import { ChainForker } from ${JSON.stringify(join(PACKAGE_DIR, 'dist/forker.js'))};
import { WorkerProcess } from ${JSON.stringify(join(PACKAGE_DIR, 'dist/worker.js'))};
import { mkdirSync } from 'node:fs';
import { constants } from 'node:os';
const plan = await cachedLaunchPlan('auto', process.platform, process.getuid() === 0, process.env);
const forker = new ChainForker(plan);
while (!forker.usable) await new Promise((r) => setTimeout(r, 10));
const env = { PATH: process.env.PATH };
for (const i of [1, 2]) {
  // Each worker in a directory of its own: a directory holds one worker tree (its lock).
  mkdirSync(String(i));
  const chain = WorkerProcess.park({ plan, env, cwd: process.cwd(), dispatcherPid: process.pid }, constants.signals, forker);
  await chain.ready;
  chain.go(process.cwd() + '/' + i, ['sleep', ${JSON.stringify(marker)}]);
  if ((await chain.started).kind !== 'started') process.exit(3);
  chain.pipeOutput(() => {}, () => {});
  chain.sendInput('', () => {});
}
process.stdout.write('running\\n');
setInterval(() => {}, 1000);
`,
    );
    const child = spawn(process.execPath, [host], { cwd: root.dir, stdio: ['ignore', 'pipe', 'inherit'] });
    // Never left behind by a failing test: the host dies with it at the latest.
    onTestFinished(() => void child.kill('SIGKILL'));
    await new Promise<void>((resolve) => child.stdout.on('data', (text: Buffer) => text.toString().includes('running') && resolve()));
    await waitFor(() => withMarker(marker).length === 2, 10_000, 'both workers to run');
    const forkerPid = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    expect(forkerPid).toHaveLength(1);
    child.kill('SIGKILL');
    await waitFor(() => withMarker(marker).length === 0, 10_000, 'the workers to die with their host');
    await waitFor(() => !processRunning(forkerPid[0]!), 10_000, 'the forker to die with its host');
  }, 60_000);
});
