// Starting a run (shared by `run` and `resume`): reset the job's files, bind its control socket,
// start the detached runner with the lock and the socket, then return or follow it.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bindForRunner, type HandedSocket } from '../control/server.js';
import { CommandError, EXIT_OK } from '../errors.js';
import { jobFile } from '../paths.js';
import { STOP_SIGNALS } from '@prun/kit/cli';
import { runnerNodeOptions } from '../signals.js';
import { jobState, recordEnd, type JobRecord } from '../state.js';
import { formatSeconds, readInt, removeDeadWritersTemps, removeFile, utcNow, writeAtomic } from '../text.js';
import type { Context } from './context.js';

const BIN_SHIM = fileURLToPath(new URL('../../bin/prun-job.js', import.meta.url));
const PREVIOUS_RUN_FILES = ['exit_code', 'ended_at', 'output.txt', 'model'];

export function writeJob(jobDir: string, job: JobRecord): void {
  writeAtomic(jobFile(jobDir, 'job.json'), JSON.stringify(job, null, 2) + '\n');
}

/** A run about to start: its job, with the job's lock held on lockFd. */
export interface RunStart {
  jobDir: string;
  lockFd: number;
  job: JobRecord;
  prompt: string;
  background: boolean;
  timeout: number | null;
  runKind: 'new' | 'resume';
}

/**
 * Reset the job's files for a new run and start its detached runner, handing it the lock
 * descriptor (fd 3) so the lock stays held with no gap, the listening control socket (fd 4), and
 * in the foreground the read end of a pipe (its stdin) whose end of file, when this process ends
 * for any reason, stops the run.
 */
function startRunner(run: RunStart, control: HandedSocket, ctx: Context): ChildProcess {
  const { jobDir, lockFd, job, prompt, background, timeout, runKind } = run;
  job.mode = background ? 'background' : 'foreground';
  job.timeout = timeout;
  job.run_kind = runKind;
  removeDeadWritersTemps(jobDir);
  writeJob(jobDir, job);
  writeAtomic(jobFile(jobDir, 'prompt.txt'), prompt);
  for (const name of PREVIOUS_RUN_FILES) removeFile(jobFile(jobDir, name));
  const runs = (readInt(jobFile(jobDir, 'runs')) ?? 0n) + 1n;
  writeAtomic(jobFile(jobDir, 'runs'), `${runs}\n`);
  writeAtomic(jobFile(jobDir, 'started_at'), utcNow() + '\n');
  writeAtomic(jobFile(jobDir, 'status'), 'running\n');
  const argv = [...runnerNodeOptions(), BIN_SHIM, '__runner', jobDir, '3', '4'];
  // The caller pipe is the runner's stdin: Node half-closes the parent's end of any other extra
  // pipe at once, which the runner would read as the caller's end.
  if (!background) argv.push('0');
  const failed = (message: string): CommandError => {
    recordEnd(jobDir, 'failed', `error: ${message}`, message);
    return new CommandError(message);
  };
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, argv, {
      cwd: job.cwd ?? process.cwd(),
      env: ctx.env,
      // Its own session, so the caller's terminal and process group never signal it.
      detached: true,
      // No handle on the caller's stdout or stderr, so whoever runs this command never waits for the runner.
      stdio: [background ? 'ignore' : 'pipe', 'ignore', 'ignore', lockFd, control.fd],
    });
  } catch (error) {
    throw failed(`could not start the runner: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (child.pid === undefined) throw failed('could not start the runner');
  child.on('error', () => undefined);
  return child;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export async function startRun(run: RunStart, ctx: Context, options: { onBindFailure?: () => void } = {}): Promise<number> {
  const { jobDir, lockFd, job, background, timeout } = run;
  let child: ChildProcess;
  let control: HandedSocket | undefined;
  try {
    try {
      control = await bindForRunner(jobDir);
    } catch (error) {
      options.onBindFailure?.();
      throw error;
    }
    child = startRunner(run, control, ctx);
  } catch (error) {
    if (control) removeFile(control.path);
    throw error;
  } finally {
    // The runner has its own copies now; from here on it alone holds the lock and the socket.
    control?.release();
    closeSync(lockFd);
  }
  const name = job.name ?? basename(jobDir);
  if (background) {
    child.unref();
    ctx.out(`job: ${name}\nstatus: running\ntimeout_s: ${formatSeconds(timeout)}\n`);
    return EXIT_OK;
  }
  ctx.note(`started job ${name}`);
  return followRunner(ctx, jobDir, child);
}

/**
 * Foreground: wait for the runner and print the result. SIGTERM, SIGHUP or SIGINT closes the
 * caller pipe, so the runner stops the run and records it, and this process still prints the
 * result; a second signal ends this process at once.
 */
async function followRunner(ctx: Context, jobDir: string, child: ChildProcess): Promise<number> {
  const callerPipe = child.stdin;
  const onSignal = (): void => {
    callerPipe?.destroy();
    for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  callerPipe?.on('error', () => undefined);
  if (!exited(child)) await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
  callerPipe?.destroy();
  // Loaded only here: `run --background` never prints a result block.
  const { printResult } = await import('./result.js');
  return printResult(ctx, jobDir, jobState(jobDir), false);
}
