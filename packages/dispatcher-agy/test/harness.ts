/**
 * Black-box harness: runs the built bin against tools/fake-agy, each test in its own root
 * (own TMPDIR for state dirs, own HOME so quota never touches the real ~/.claude).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
export const BIN = join(PACKAGE_DIR, 'bin', 'prun-dispatch-agy.js');
export const FAKE_AGY = fileURLToPath(new URL('../../../tools/fake-agy/fake-agy', import.meta.url));

/**
 * An agy at `path` that runs the shell `step` before it is fake agy for the task itself; the
 * preflight's `--version` and `models` and a quota refresh (`-p /usage`) go straight to fake agy.
 */
export function agyWithStep(path: string, step: string): string {
  writeFileSync(path, ['#!/bin/sh', `case "$*" in --version|models|*/usage*) exec "${FAKE_AGY}" "$@";; esac`, step, `exec "${FAKE_AGY}" "$@"`, ''].join('\n'));
  chmodSync(path, 0o755);
  return path;
}

export const WORKER_RESULT_TEXT =
  '# unit_a result\nConclusion: worker-written\nFiles: none\nOpen items: none\nVerification: mock\n\n| row | value |\n|---|---|\n| a | 1 |\n';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stateDir: string | null;
}

export interface FakeCall {
  kind: 'version' | 'models' | 'usage' | 'worker';
  /** When it started (ms since the epoch), logged first thing. */
  time: number;
  argv: string[];
  cwd: string;
  pid: number;
  envNames: string[];
  stdin?: string;
  prompt?: string | null;
  rejected?: string;
}

export interface RunOptions {
  mode?: string | null;
  /** Values of undefined remove the variable from the run's environment. */
  env?: Record<string, string | undefined>;
  args?: string[];
  resultPath?: string;
  /** true: no PRUN_SCRATCH_CWD, so the worker runs in <state-dir>/work. */
  ownCwd?: boolean;
  /** Called once the child is started (signal tests). */
  onSpawn?: (pid: number) => void;
  timeoutMs?: number;
  /** A command that execs the dispatcher (its words, then node's argv follow): the same pid. */
  wrap?: readonly string[];
}

export class Root {
  readonly dir: string;
  readonly prompt: string;
  readonly work: string;
  readonly home: string;
  readonly log: string;
  readonly result: string;
  private quotaCount = 0;
  readonly defaultQuota: string;

  constructor() {
    this.dir = realpathSync(mkdtempSync(join(tmpdir(), 'prun-dispatch-test-')));
    this.prompt = join(this.dir, 'prompt.txt');
    this.work = join(this.dir, 'work');
    this.home = join(this.dir, 'home');
    this.log = join(this.dir, 'log');
    this.result = join(this.dir, 'unit-result.md');
    writeFileSync(this.prompt, 'Audit section 3 and report evidence.\n');
    mkdirSync(this.work);
    mkdirSync(this.home);
    this.defaultQuota = this.quota(1.0, 1.0);
  }

  /** A caller-owned snapshot with both windows of each group at the given fractions. */
  quota(gemini: number, second: number): string {
    this.quotaCount += 1;
    const path = join(this.dir, `agy-quota-${this.quotaCount}.json`);
    writeFileSync(path, JSON.stringify(snapshot(gemini, second)));
    return path;
  }

  baseEnv(): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.home,
      TMPDIR: this.dir,
      TEMP: this.dir,
      TMP: this.dir,
      ANTIGRAVITY_BIN: FAKE_AGY,
      ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS: '10',
      FAKE_AGY_LOG_DIR: this.log,
      FAKE_AGY_WORKER_TEXT: WORKER_RESULT_TEXT,
      PRUN_SCRATCH_CWD: this.work,
      AGY_QUOTA_CACHE: this.defaultQuota,
      // The contract tests compare the pids the fake records with the host's process table; in
      // a PID namespace the fake sees its own pids. isolation.test.ts covers the isolated
      // worker, and upstream-isolated.test.ts runs the upstream contract tests isolated.
      PRUN_ISOLATE: process.env.PRUN_DISPATCH_TEST_ISOLATE ?? 'off',
    };
  }

  run(options: RunOptions = {}): Promise<RunResult> {
    const env: Record<string, string> = this.baseEnv();
    if (options.ownCwd) delete env.PRUN_SCRATCH_CWD;
    // Preflight costs two extra processes; only tests about the listing need it.
    const wantsPreflight = options.env !== undefined && ('FAKE_AGY_MODELS' in options.env || 'ANTIGRAVITY_PREFLIGHT' in options.env);
    if (!wantsPreflight) env.ANTIGRAVITY_PREFLIGHT = 'off';
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    const mode = options.mode === undefined ? 'plan' : options.mode;
    const argv = [BIN, '--prompt-file', this.prompt, '--result-file', options.resultPath ?? this.result, '--unit-id', 'unit_a'];
    if (mode !== null) argv.push('--mode', mode);
    argv.push(...(options.args ?? []));
    return runNode(argv, { env, cwd: this.dir, ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}), ...(options.wrap ? { wrap: options.wrap } : {}), timeoutMs: options.timeoutMs ?? 30_000 });
  }

  calls(): FakeCall[] {
    const file = join(this.log, 'calls.jsonl');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as FakeCall);
  }

  workerCalls(): FakeCall[] {
    return this.calls().filter((call) => call.kind === 'worker');
  }

  /** The one worker launch (fails the test when there is none). */
  worker(): FakeCall {
    const calls = this.workerCalls();
    if (calls.length !== 1) throw new Error(`expected one worker launch, got ${calls.length}`);
    return calls[0]!;
  }

  stateDirs(): string[] {
    return readdirSync(this.dir).filter((name) => name.startsWith('prun-task-'));
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export function snapshot(gemini: number, second: number): unknown {
  const bucket = (id: string, window: string, value: number): unknown => ({ id, window, remaining_fraction: value });
  return {
    cached_at: Date.now() / 1000,
    usage: {
      groups: [
        { name: 'Gemini Models', buckets: [bucket('gemini-5h', '5h', gemini), bucket('gemini-weekly', 'weekly', gemini)] },
        { name: 'Claude and GPT models', buckets: [bucket('3p-5h', '5h', second), bucket('3p-weekly', 'weekly', second)] },
      ],
    },
  };
}

export function runNode(
  argv: string[],
  options: { env: Record<string, string>; cwd: string; onSpawn?: (pid: number) => void; timeoutMs: number; input?: string; wrap?: readonly string[] },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = [...(options.wrap ?? []), process.execPath, ...argv];
    const child = spawn(file!, args, { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.stdin.end(options.input ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dispatcher did not finish within ${options.timeoutMs} ms: ${Buffer.concat(err).toString()}`));
    }, options.timeoutMs);
    child.on('error', reject);
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      // Exit 1 is never a dispatcher code: it means Node itself failed (shown to make it diagnosable).
      if (code === 1) console.error(`dispatcher exited 1:\n${Buffer.concat(err).toString('utf8')}`);
      const match = /^STATE-DIR (.+)\n$/.exec(stdout);
      resolve({ code, signal, stdout, stderr: Buffer.concat(err).toString('utf8'), stateDir: match ? match[1]! : null });
    });
  });
}

export function readState(stateDir: string | null, name: string): string {
  if (stateDir === null) throw new Error('no STATE-DIR line');
  return readFileSync(join(stateDir, name), 'utf8');
}

/** Poll until `check` holds or the deadline passes. */
export async function waitFor(check: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process is alive and not a zombie waiting for its parent. */
export function processRunning(pid: number): boolean {
  if (!processAlive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
}

/** Roots for concurrent tests, all removed together once the file is done. */
export function rootPool(): { root: () => Root; cleanup: () => void } {
  const roots: Root[] = [];
  return {
    root: () => {
      const r = new Root();
      roots.push(r);
      return r;
    },
    cleanup: () => {
      for (const r of roots) r.cleanup();
    },
  };
}

/**
 * How many dispatches a loop test runs at once: enough that a loaded machine finishes a loop
 * well inside its timeout, few enough not to load it further.
 */
export const DISPATCH_PARALLEL = 3;

/** A timeout (ms) for a test that runs a list of dispatches, at DISPATCH_PARALLEL at a time. */
export function loopTimeoutMs(dispatches: number): number {
  return 30_000 + Math.ceil(dispatches / DISPATCH_PARALLEL) * 15_000;
}

/** `fn` over `items`, at most `limit` at a time; results in the order of `items`. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
