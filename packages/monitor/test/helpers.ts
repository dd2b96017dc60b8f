import { spawn, spawnSync, type SpawnOptions } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STATE_FILES } from '@prun/unit-state';

export const packageRoot = fileURLToPath(new URL('..', import.meta.url));
export const repoRoot = join(packageRoot, '..', '..');
export const monitorBin = join(packageRoot, 'bin', 'prun-monitor.cjs');
export const gatherBin = join(packageRoot, 'bin', 'prun-gather.cjs');

/**
 * Temp dirs for one test file, all removed after the file (tests in a file run concurrently,
 * so nothing is removed before every test is through). `base()` is a fresh one, symlinks resolved.
 */
export function tempDirs(afterAll: (fn: () => void) => void): { base: () => string } {
  const cleanups: Array<() => void> = [];
  afterAll(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  return {
    base: () => {
      const { dir, cleanup } = tempDir();
      cleanups.push(cleanup);
      return realpathSync(dir);
    },
  };
}

/** How often `needle` occurs in `text`. */
export function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** A temp dir for one test, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'prun-monitor-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface StateDirOptions {
  /** Result text; written to `<base>/<name>.result.md` (the entry is always written). */
  result?: string;
  /** Tail text; null writes no tail. */
  tail?: string | null;
  dispatchPid?: string;
  /** Set the result's mtime 5 s in the past (the upstream fixture's default). */
  backdate?: boolean;
}

/** The upstream fixture: `base/name/` with tail, result-file, optional result and dispatch-pid. */
export function makeStateDir(base: string, name: string, options: StateDirOptions = {}): { dir: string; result: string } {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  const result = join(base, `${name}.result.md`);
  if (options.tail !== null) writeFileSync(join(dir, STATE_FILES.tail), options.tail ?? 'x\n');
  writeFileSync(join(dir, STATE_FILES.resultFile), `${result}\n`);
  if (options.result !== undefined) {
    writeFileSync(result, options.result);
    if (options.backdate ?? true) setMtimeAgo(result, 5);
  }
  if (options.dispatchPid !== undefined) writeFileSync(join(dir, STATE_FILES.dispatchPid), `${options.dispatchPid}\n`);
  return { dir, result };
}

export function setMtimeAgo(path: string, seconds: number): void {
  const when = new Date(Date.now() - seconds * 1000);
  utimesSync(path, when, when);
}

/** A pid that was alive a moment ago and has been reaped. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  if (child.pid === undefined) throw new Error('could not start a child');
  return child.pid;
}

/** Environment for a bin run: PATH only, plus the given settings (no agent variables). */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...extra };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Running {
  child: ReturnType<typeof spawn>;
  /** Resolves when the first stdout line starting with `prefix` has arrived. */
  lineStartingWith(prefix: string, timeoutMs?: number): Promise<string>;
  result: Promise<RunResult>;
  stdout(): string;
}

/** Start a bin with a controlled environment; stdin stays open unless `input` is given. */
export function start(bin: string, args: string[], env: NodeJS.ProcessEnv, options: SpawnOptions & { input?: string } = {}): Running {
  const begin = Date.now();
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'], ...options });
  let stdout = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const waiter of waiters.splice(0)) waiter();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdin!.on('error', () => {});
  if (options.input !== undefined) child.stdin!.end(options.input);
  // A bin that never ends must not outlive the test run.
  const killer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  const result = new Promise<RunResult>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      for (const waiter of waiters.splice(0)) waiter();
      resolve({ code, stdout, stderr, ms: Date.now() - begin });
    });
  });
  let exited = false;
  void result.then(() => {
    exited = true;
  });
  return {
    child,
    result,
    stdout: () => stdout,
    lineStartingWith(prefix, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line starting with ${prefix}; stdout: ${stdout}`)), timeoutMs);
        const check = (): void => {
          const line = stdout.split('\n').find((l) => l.startsWith(prefix));
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(line);
          } else if (exited) {
            clearTimeout(timer);
            reject(new Error(`exited without a line starting with ${prefix}; stdout: ${stdout}`));
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

/** Run a bin to completion (stdin closed, or fed `input`). */
export function run(bin: string, args: string[], env: NodeJS.ProcessEnv, options: SpawnOptions & { input?: string } = {}): Promise<RunResult> {
  return start(bin, args, env, { input: '', ...options }).result;
}

/** Monitor with the upstream fixture's settings: threshold 1, poll 1, timeout 8, window 0. */
export function monitorEnv(overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    PRUN_STALL_THRESHOLD: '1',
    PRUN_MONITOR_POLL: '1',
    PRUN_MONITOR_TIMEOUT: '8',
    PRUN_MONITOR_STABLE_WINDOW: '0',
    ...overrides,
  });
}

/** Gather with the upstream fixture's settings: timeout 6, poll 1, window 0. */
export function gatherEnv(overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    AGENT_CONFIG_GATHER_TIMEOUT: '6',
    PRUN_GATHER_POLL: '1',
    PRUN_GATHER_STABLE_WINDOW: '0',
    ...overrides,
  });
}

/** Make a temp tree readable by another user (for the EPERM test run under uid 65534). */
export function openUp(...paths: string[]): void {
  for (const path of paths) chmodSync(path, 0o755);
}

/**
 * The inode numbers a process watches through inotify (from /proc/PID/fdinfo). Lets a test
 * wait for the monitor to have looked and set up its watches, instead of sleeping.
 */
export function inotifyWatchedInodes(pid: number): Set<number> {
  const inodes = new Set<number>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      if (!readlinkSync(`/proc/${pid}/fd/${fd}`).includes('inotify')) continue;
      for (const match of readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').matchAll(/^inotify wd:\d+ ino:([0-9a-f]+) /gm)) {
        inodes.add(Number.parseInt(match[1]!, 16));
      }
    } catch {
      // The descriptor closed while we looked.
    }
  }
  return inodes;
}

/** Resolves once `condition()` holds (checked every 10 ms, for at most `timeoutMs`). */
export async function until(condition: () => boolean, timeoutMs = 20_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} never held`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves once `pid` watches `dir` through inotify. */
export async function untilWatching(pid: number, dir: string, timeoutMs = 20_000): Promise<void> {
  const inode = statSync(dir).ino;
  await until(() => inotifyWatchedInodes(pid).has(inode), timeoutMs, `process ${pid} watching ${dir}`);
}
