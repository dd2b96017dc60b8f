/**
 * Child-process plumbing for the dispatcher: every child leads its own process group so that a
 * signal, a deadline or the end of the run can stop it together with everything it started.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { constants } from 'node:os';

/** Send `signal` to the whole process group led by `pid`; false when the group is gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

export function signalNumber(signal: NodeJS.Signals): number {
  return constants.signals[signal] ?? 0;
}

export interface CapturedRun {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  launchError: string | null;
}

/**
 * Run a short command to completion, capturing its output as UTF-8 text (invalid bytes
 * replaced). On timeout the whole group is killed. `onStart` hands the child to whoever must be
 * able to kill it early (the signal handler). With `execReport` the child also gets a pipe on
 * fd 3, on which a wrapper reports that its own exec of the command failed: what it wrote,
 * turned into a launch error by `execReport` (null: none), is then the run's `launchError`, as
 * a failed spawn of the command itself would be.
 */
export function runCaptured(
  file: string,
  args: readonly string[],
  options: {
    env: NodeJS.ProcessEnv;
    cwd: string;
    timeoutMs: number;
    onStart?: (child: ChildProcess | null) => void;
    execReport?: (report: string) => string | null;
  },
): Promise<CapturedRun> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      const stdio: StdioOptions = options.execReport === undefined ? ['inherit', 'pipe', 'pipe'] : ['inherit', 'pipe', 'pipe', 'pipe'];
      child = spawn(file, [...args], { cwd: options.cwd, env: options.env, stdio, detached: true });
    } catch (error) {
      resolve({ stdout: '', stderr: '', code: null, signal: null, timedOut: false, launchError: errorText(error) });
      return;
    }
    options.onStart?.(child);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => err.push(chunk));
    const report: Buffer[] = [];
    child.stdio[3]?.on('data', (chunk: Buffer) => report.push(chunk));
    let timedOut = false;
    let launchError: string | null = null;
    const timer = timerAfter(options.timeoutMs, () => {
      timedOut = true;
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    });
    child.on('error', (error) => {
      launchError = errorText(error);
      if (child.pid === undefined) {
        if (timer !== null) clearTimeout(timer);
        options.onStart?.(null);
        resolve({ stdout: '', stderr: '', code: null, signal: null, timedOut: false, launchError });
      }
    });
    child.on('close', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      options.onStart?.(null);
      // Anything the command left behind in its group goes with it.
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      const execFailed = options.execReport?.(Buffer.concat(report).toString('utf8')) ?? null;
      if (execFailed !== null) {
        resolve({ stdout: '', stderr: '', code: null, signal: null, timedOut: false, launchError: execFailed });
        return;
      }
      resolve({
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        code,
        signal,
        timedOut,
        launchError: child.pid === undefined ? (launchError ?? 'could not start the process') : null,
      });
    });
  });
}

// setTimeout fires at once for delays past 2^31-1 ms; a delay that long (24.8 days) is "never".
const MAX_TIMER_MS = 2 ** 31 - 1;

/** setTimeout that treats an overlong delay as no timer at all. */
export function timerAfter(ms: number, fn: () => void): NodeJS.Timeout | null {
  return ms > MAX_TIMER_MS ? null : setTimeout(fn, Math.max(0, ms));
}

/** Node's message for a spawn of `file` that failed with the error code `code` (`spawn /bin/agy EACCES`). */
export function spawnErrorText(file: string, code: string): string {
  return `spawn ${file} ${code}`;
}

export function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}
