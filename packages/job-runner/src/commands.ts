// The user commands. Each returns its exit code; output goes through the context.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, rmSync, statSync, fstatSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NAME_RE, oneName, parseArgs, parseSeconds, readMessage, runTimeout, type ParsedArgs } from './args.js';
import { sendControl, sendRequest, sleep, waitWhile } from './control.js';
import { CommandError, EXIT_FAIL, EXIT_OK, EXIT_STILL_RUNNING, NotRunningError, usageError } from './errors.js';
import { takeJobLock } from './lock.js';
import {
  checkSocketPath,
  expandUser,
  findSessionFiles,
  jobFile,
  jobsDir,
  logicalCwd,
  sessionsDir,
  socketPath,
  stateRoot,
} from './paths.js';
import {
  appendPrompt,
  DEFAULT_PROFILE,
  loadProfiles,
  pickProfile,
  profileArgs,
  resolveModel,
  resolveThinking,
} from './profiles.js';
import {
  formatResultBlock,
  jobState,
  jobStates,
  modelLabel,
  readJobRecord,
  recordEnd,
  resultFields,
  type JobRecord,
} from './state.js';
import {
  formatAge,
  formatSeconds,
  parseUtc,
  pyRepr,
  readInt,
  readText,
  removeFile,
  shellQuote,
  utcNow,
  writeAtomic,
} from './text.js';
import { DEFAULT_MAX_DEPTH, RECENT_S, type Timings } from './timing.js';

export interface Context {
  env: NodeJS.ProcessEnv;
  timings: Timings;
  /** resultBlock: a reader gone by then does not change the exit code (see printResult). */
  out: (text: string, options?: { resultBlock?: boolean }) => void;
  note: (message: string) => void;
  readStdin: () => string;
}

const BIN_SHIM = fileURLToPath(new URL('../bin/prun-job.js', import.meta.url));
const PREVIOUS_RUN_FILES = ['exit_code', 'ended_at', 'output.txt', 'model'];
const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT'];

// --- names and jobs ----------------------------------------------------------

export function validateName(name: string): void {
  if (!NAME_RE.test(name)) {
    throw usageError(
      `invalid job name: ${pyRepr(name)} (use letters, digits, '.', '_' and '-', start and end with a letter or digit, at most 64 characters)`,
    );
  }
}

export function defaultName(profileName: string, hex: string = randomBytes(2).toString('hex')): string {
  const base =
    profileName
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+|[._-]+$/g, '')
      .slice(0, 59) || 'agent';
  return `${base}-${hex}`;
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Look a job up in the current project, then in all projects. */
export function findJob(name: string, env: NodeJS.ProcessEnv): string {
  validateName(name);
  const direct = join(jobsDir(logicalCwd(env), env), name);
  if (isDir(direct)) return direct;
  let projects: string[] = [];
  try {
    projects = readdirSync(stateRoot(env)).sort();
  } catch {
    projects = [];
  }
  const matches = projects.map((p) => join(stateRoot(env), p, 'jobs', name)).filter(isDir);
  if (matches.length === 1) return matches[0] as string;
  if (matches.length > 1) {
    throw new CommandError(
      `job ${name} exists in several projects; run the command from the project's directory:\n  ${matches.join('\n  ')}`,
    );
  }
  throw new CommandError(`unknown job: ${name}`);
}

export function projectJobs(project: string, env: NodeJS.ProcessEnv): string[] {
  const root = jobsDir(project, env);
  let names: string[];
  try {
    names = readdirSync(root).sort();
  } catch {
    return [];
  }
  return names.map((n) => join(root, n)).filter(isDir);
}

function parseDepth(text: string | undefined): number | undefined {
  const trimmed = (text ?? '').trim();
  return /^[+-]?\d+$/.test(trimmed) ? Number.parseInt(trimmed, 10) : undefined;
}

/** The depth a new agent gets; refuses past MULTI_AGENT_MAX_DEPTH. */
export function checkDepth(env: NodeJS.ProcessEnv): number {
  const depth = env['MULTI_AGENT_DEPTH'] ? (parseDepth(env['MULTI_AGENT_DEPTH']) ?? 0) : 0;
  const limit = env['MULTI_AGENT_MAX_DEPTH'] ? (parseDepth(env['MULTI_AGENT_MAX_DEPTH']) ?? DEFAULT_MAX_DEPTH) : DEFAULT_MAX_DEPTH;
  if (depth >= limit) {
    throw new CommandError(`cannot start an agent: this caller is at depth ${depth} and MULTI_AGENT_MAX_DEPTH is ${limit}`);
  }
  return depth + 1;
}

// --- results -------------------------------------------------------------------

export interface ResultDocument {
  name: string;
  status: string;
  profile: string;
  model: string;
  duration_s: number | null;
  output: string;
}

function resultDocument(jobDir: string, status: string): ResultDocument {
  const r = resultFields(jobDir, status);
  return {
    name: r.name,
    status: r.status,
    profile: r.profile,
    model: r.model,
    duration_s: r.durationS ?? null,
    output: r.output.replace(/\n+$/, ''),
  };
}

function printResult(ctx: Context, jobDir: string, status: string, json: boolean): number {
  try {
    ctx.out(json ? JSON.stringify(resultDocument(jobDir, status)) + '\n' : formatResultBlock(resultFields(jobDir, status)), {
      resultBlock: true,
    });
  } catch {
    // The caller's stdout may be gone when a signal stopped the run.
  }
  return status === 'done' ? EXIT_OK : EXIT_FAIL;
}

// --- starting runs -------------------------------------------------------------

function writeJob(jobDir: string, job: JobRecord): void {
  writeAtomic(jobFile(jobDir, 'job.json'), JSON.stringify(job, null, 2) + '\n');
}

/** A run about to start: its job, with the job's lock held on lockFd. */
interface RunStart {
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
 * descriptor (fd 3) so the lock stays held with no gap, and in the foreground the read end of a
 * pipe (its stdin) whose end of file, when this process ends for any reason, stops the run.
 */
function startRunner(run: RunStart, ctx: Context): ChildProcess {
  const { jobDir, lockFd, job, prompt, background, timeout, runKind } = run;
  job.mode = background ? 'background' : 'foreground';
  job.timeout = timeout;
  job.run_kind = runKind;
  writeJob(jobDir, job);
  writeAtomic(jobFile(jobDir, 'prompt.txt'), prompt);
  for (const name of PREVIOUS_RUN_FILES) removeFile(jobFile(jobDir, name));
  const runs = (readInt(jobFile(jobDir, 'runs')) ?? 0) + 1;
  writeAtomic(jobFile(jobDir, 'runs'), `${runs}\n`);
  writeAtomic(jobFile(jobDir, 'started_at'), utcNow() + '\n');
  writeAtomic(jobFile(jobDir, 'status'), 'running\n');
  // The lock is held, so a leftover socket belongs to a runner that is gone.
  removeFile(socketPath(jobDir));
  const argv = [BIN_SHIM, '__runner', jobDir, '3'];
  // The caller pipe is the runner's stdin: Node half-closes the parent's end of any other extra
  // pipe at once, which the runner would read as the caller's end.
  if (!background) argv.push('0');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, argv, {
      cwd: job.cwd ?? process.cwd(),
      env: ctx.env,
      // Its own session, so the caller's terminal and process group never signal it.
      detached: true,
      // No handle on the caller's stdout or stderr, so whoever runs this command never waits for the runner.
      stdio: [background ? 'ignore' : 'pipe', 'ignore', 'ignore', lockFd],
    });
  } catch (error) {
    const message = `could not start the runner: ${error instanceof Error ? error.message : String(error)}`;
    recordEnd(jobDir, 'failed', `error: ${message}`, message);
    throw new CommandError(message);
  }
  if (child.pid === undefined) {
    const message = 'could not start the runner';
    recordEnd(jobDir, 'failed', `error: ${message}`, message);
    throw new CommandError(message);
  }
  child.on('error', () => undefined);
  return child;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

async function startRun(run: RunStart, ctx: Context): Promise<number> {
  const { jobDir, lockFd, job, background, timeout } = run;
  let child: ChildProcess;
  try {
    child = startRunner(run, ctx);
  } finally {
    closeSync(lockFd);
  }
  const name = job.name ?? basename(jobDir);
  if (background) {
    // Return once the runner listens, so an immediate steer or kill is answered at once.
    const end = Date.now() + ctx.timings.lockS * 1000;
    while (!existsSync(socketPath(jobDir)) && !exited(child) && Date.now() < end) await sleep(5);
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
  return printResult(ctx, jobDir, jobState(jobDir), false);
}

// --- commands --------------------------------------------------------------------

export async function cmdRun(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, ['--profile', '--name', '--timeout', '--model', '--thinking', '--cwd'], ['--background', '--fork']);
  const background = args.flags.has('--background');
  const timeout = runTimeout(args, background);
  const project = logicalCwd(ctx.env);
  let cwd = project;
  const cwdOption = args.values.get('--cwd');
  if (cwdOption !== undefined) {
    cwd = resolve(project, expandUser(cwdOption));
    if (!isDir(cwd)) throw usageError(`--cwd is not a directory: ${cwdOption}`);
  }
  const prompt = readMessage(args, 'prompt', ctx.readStdin);
  let fork: string | null = null;
  if (args.flags.has('--fork')) {
    fork = ctx.env['PI_SESSION_FILE'] || null;
    if (!fork) throw new CommandError('--fork needs PI_SESSION_FILE, which is not set in this environment');
    let isFile = false;
    try {
      isFile = statSync(fork).isFile();
    } catch {
      isFile = false;
    }
    if (!isFile) throw new CommandError(`--fork: PI_SESSION_FILE does not exist: ${fork}`);
  }
  const depth = checkDepth(ctx.env);
  const profile = pickProfile(loadProfiles(cwd, ctx.env), args.values.get('--profile') || DEFAULT_PROFILE);

  const root = jobsDir(project, ctx.env);
  // The socket path has the same length for every name in root.
  checkSocketPath(join(root, 'name'));
  mkdirSync(root, { recursive: true });
  let name = args.values.get('--name');
  if (name !== undefined) {
    validateName(name);
    try {
      mkdirSync(join(root, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      throw new CommandError(
        `job ${name} already exists in this project; use \`resume ${name}\` to continue it, pick another --name, or \`rm ${name}\` first`,
      );
    }
  } else {
    for (let attempt = 0; attempt < 100 && name === undefined; attempt += 1) {
      const candidate = defaultName(profile.name);
      try {
        mkdirSync(join(root, candidate));
        name = candidate;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    if (name === undefined) throw new CommandError('could not find a free job name; pass --name');
  }
  const jobDir = join(root, name);

  let lockFd: number | undefined;
  let job: JobRecord;
  try {
    // Taken at once, so the job directory never exists without a lock.
    lockFd = takeJobLock(jobDir, `job ${name} is busy; try again`, ctx.timings.lockS);
    const model = resolveModel(args.values.get('--model'), profile, ctx.env);
    const thinking = resolveThinking(args.values.get('--thinking'), profile, ctx.env);
    const systemPromptFile = jobFile(jobDir, 'system-prompt.md');
    const piArgs = profileArgs(profile, model, thinking, systemPromptFile);
    if (profile.prompt_mode === 'replace') writeAtomic(systemPromptFile, profile.body + '\n');
    writeAtomic(jobFile(jobDir, 'append-prompt.md'), appendPrompt(profile, name));
    const sessionDir = sessionsDir(project, ctx.env);
    mkdirSync(sessionDir, { recursive: true });
    job = {
      name,
      profile: profile.name,
      profile_source: profile.source,
      cwd,
      project,
      session_dir: sessionDir,
      parent: ctx.env['MULTI_AGENT_JOB'] || null,
      depth,
      model,
      thinking,
      fork,
      pi_args: piArgs,
      created_at: utcNow(),
    };
  } catch (error) {
    rmSync(jobDir, { recursive: true, force: true });
    if (lockFd !== undefined) closeSync(lockFd);
    throw error;
  }
  return startRun({ jobDir, lockFd, job, prompt, background, timeout, runKind: 'new' }, ctx);
}

export async function cmdResume(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, ['--timeout'], ['--background']);
  if (args.positional.length < 1) throw usageError('resume needs a job name and a prompt');
  const name = args.positional.shift() as string;
  const background = args.flags.has('--background');
  const timeout = runTimeout(args, background);
  const prompt = readMessage(args, 'prompt', ctx.readStdin);
  const jobDir = findJob(name, ctx.env);
  checkDepth(ctx.env);
  // A runner holds the lock while the job runs, so taking it proves nothing runs, and keeps it so.
  const lockFd = takeJobLock(jobDir, `job ${name} is running; use steer, or wait for it to finish`, ctx.timings.lockS);
  let job: JobRecord;
  try {
    const record = readJobRecord(jobDir);
    if (!record) throw new CommandError(`job ${name} has no readable job.json`);
    if (!record.cwd || !isDir(record.cwd)) {
      throw new CommandError(`the job's working directory no longer exists: ${record.cwd ?? '?'}`);
    }
    job = record;
  } catch (error) {
    closeSync(lockFd);
    throw error;
  }
  if (findSessionFiles(job.session_dir ?? '', name).length === 0) {
    ctx.note(`no session file found for ${name}; the agent starts a new conversation`);
  }
  return startRun({ jobDir, lockFd, job, prompt, background, timeout, runKind: 'resume' }, ctx);
}

function lastProgressLine(jobDir: string): string | undefined {
  const lines = (readText(jobFile(jobDir, 'progress.log')) ?? '').split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  return lines[lines.length - 1];
}

export async function cmdWait(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, ['--timeout'], ['--json']);
  const jobDir = findJob(oneName(args, 'wait'), ctx.env);
  const json = args.flags.has('--json');
  const timeoutText = args.values.get('--timeout');
  const timeout = timeoutText === undefined ? undefined : parseSeconds(timeoutText, '--timeout', { allowInfinite: true });
  const end = timeout === undefined || timeout === Infinity ? undefined : Date.now() + timeout * 1000;
  // Quicker than the original's half-second poll: a finished job is reported within 0.1 s.
  const pollMs = Math.min(ctx.timings.waitPollS, 0.1) * 1000;
  for (;;) {
    const status = jobState(jobDir);
    if (status !== 'running') return printResult(ctx, jobDir, status, json);
    if (end !== undefined && Date.now() >= end) {
      const last = lastProgressLine(jobDir);
      const name = basename(jobDir);
      if (json) {
        ctx.out(JSON.stringify({ name, status: 'running', waited_s: timeout, last_progress: last ?? null }) + '\n');
      } else {
        ctx.out(`job: ${name}\nstatus: running\nwaited_s: ${formatSeconds(timeout)}\n${last !== undefined ? `last_progress: ${last}\n` : ''}`);
      }
      return EXIT_STILL_RUNNING;
    }
    await sleep(end === undefined ? pollMs : Math.max(0, Math.min(pollMs, end - Date.now())));
  }
}

export async function cmdResult(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], ['--json']);
  const jobDir = findJob(oneName(args, 'result'), ctx.env);
  const status = jobState(jobDir);
  if (status === 'running') throw new CommandError(`job ${basename(jobDir)} is still running; use wait`);
  return printResult(ctx, jobDir, status, args.flags.has('--json'));
}

export async function cmdSteer(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], []);
  if (args.positional.length < 1) throw usageError('steer needs a job name and a message');
  const name = args.positional.shift() as string;
  const message = readMessage(args, 'message', ctx.readStdin);
  const jobDir = findJob(name, ctx.env);
  const reply = await sendControl(jobDir, { type: 'steer', message }, ctx.timings);
  ctx.out(`job: ${basename(jobDir)}\nsteer: ${String(reply['disposition'] ?? 'queued')}\n`);
  return EXIT_OK;
}

export async function cmdAbort(argv: string[], ctx: Context): Promise<number> {
  const jobDir = findJob(oneName(parseArgs(argv, [], []), 'abort'), ctx.env);
  const reply = await sendControl(jobDir, { type: 'abort' }, ctx.timings);
  ctx.out(`job: ${basename(jobDir)}\nabort: ${String(reply['disposition'] ?? 'requested')}\n`);
  return EXIT_OK;
}

/** The pattern a person can give `pkill -f` to find a stuck runner of this job. */
export function runnerPattern(jobDir: string): string {
  // `[_]` keeps the pattern from matching the shell that runs the pkill.
  return `[_]_runner ${jobDir.replace(/([.^$*+?()[\]{}|\\])/g, '\\$1')} `;
}

/**
 * Ask the job's runner to stop the run and wait until it has exited. The runner records
 * `killed` itself; this writes nothing.
 */
async function killJob(jobDir: string, ctx: Context): Promise<string> {
  const name = basename(jobDir);
  const stuck = `the runner of job ${name} is not responding; to stop it, run: pkill -KILL -f ${shellQuote(runnerPattern(jobDir))}`;
  let reply: Record<string, unknown> | undefined;
  try {
    reply = await sendRequest(jobDir, { type: 'kill' }, stuck, ctx.timings);
  } catch (error) {
    if (!(error instanceof NotRunningError)) throw error;
    reply = { ok: false };
  }
  // A runner that is finishing answers "not running" and records its own status.
  if (!(await waitWhile(() => jobState(jobDir) === 'running', ctx.timings.runnerStopGraceS))) throw new CommandError(stuck);
  if (reply !== undefined && !reply['ok']) return `job: ${name}\nstatus: ${jobState(jobDir)} (not running)\n`;
  return `job: ${name}\nstatus: ${jobState(jobDir)}\n`;
}

export async function cmdKill(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], ['--all']);
  if (args.flags.has('--all')) {
    if (args.positional.length > 0) throw usageError('kill takes a job name or --all, not both');
    const dirs = projectJobs(logicalCwd(ctx.env), ctx.env);
    const states = jobStates(dirs);
    const running = dirs.filter((_d, i) => states[i] === 'running');
    if (running.length === 0) {
      ctx.out('no running jobs in this project\n');
      return EXIT_OK;
    }
    const results = await Promise.all(
      running.map(async (dir) => {
        try {
          return await killJob(dir, ctx);
        } catch (error) {
          if (!(error instanceof CommandError)) throw error;
          return `job: ${basename(dir)}\nerror: ${error.message}\n`;
        }
      }),
    );
    ctx.out(results.join(''));
    return results.some((r) => r.includes('\nerror: ')) ? EXIT_FAIL : EXIT_OK;
  }
  const jobDir = findJob(oneName(args, 'kill'), ctx.env);
  ctx.out(await killJob(jobDir, ctx));
  return EXIT_OK;
}

export interface StatusDocument {
  name: string;
  status: string;
  mode: string;
  profile: string;
  model: string;
  parent: string;
  cwd: string;
  started_at: string;
  ended_at: string;
  runs: string;
  exit_code: string;
  output_file: string;
  session_file: string;
  session_cmd: string;
}

export function statusDocument(jobDir: string, env: NodeJS.ProcessEnv): StatusDocument {
  void env;
  const job = readJobRecord(jobDir) ?? {};
  const status = jobState(jobDir);
  const name = basename(jobDir);
  const sessionDir = job.session_dir ?? '';
  const sessions = findSessionFiles(sessionDir, name);
  const value = (file: string): string => (readText(jobFile(jobDir, file)) ?? '').trim() || '-';
  return {
    name,
    status,
    mode: job.mode ?? '-',
    profile: job.profile ?? '-',
    model: modelLabel(jobDir, job),
    parent: job.parent ? basename(job.parent) : '-',
    cwd: job.cwd ?? '-',
    started_at: value('started_at'),
    ended_at: value('ended_at'),
    runs: value('runs'),
    exit_code: value('exit_code'),
    output_file: jobFile(jobDir, 'output.txt'),
    session_file: sessions[sessions.length - 1] ?? '-',
    session_cmd: `cd ${shellQuote(job.cwd ?? '.')} && pi --session-dir ${shellQuote(sessionDir)} --session-id ${shellQuote(name)}`,
  };
}

export async function cmdStatus(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], ['--json']);
  const jobDir = findJob(oneName(args, 'status'), ctx.env);
  const doc = statusDocument(jobDir, ctx.env);
  if (args.flags.has('--json')) {
    ctx.out(JSON.stringify(doc) + '\n');
    return EXIT_OK;
  }
  let text = Object.entries(doc)
    .map(([k, v]) => `${k}: ${String(v)}\n`)
    .join('');
  if (doc.status === 'running') text += 'note: open the session in pi only after the job stops\n';
  ctx.out(text);
  return EXIT_OK;
}

function tailLines(text: string, count: number): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return count ? lines.slice(-count) : [];
}

export async function cmdPeek(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, ['-n'], ['-f', '--follow']);
  const count = args.values.get('-n') ?? '20';
  if (!/^\d+$/.test(count)) throw usageError(`-n needs a whole number of lines, got: ${count}`);
  const jobDir = findJob(oneName(args, 'peek'), ctx.env);
  const path = jobFile(jobDir, 'progress.log');
  const follow = args.flags.has('-f') || args.flags.has('--follow');
  if (!follow) {
    ctx.out(tailLines(readText(path) ?? '', Number(count)).map((l) => l + '\n').join(''));
    return EXIT_OK;
  }
  // Follow: print the tail, then every complete line appended until the job stops running.
  let offset = 0;
  let partial = '';
  const readNew = (): string => {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return '';
    }
    try {
      const size = fstatSync(fd).size;
      if (size <= offset) return '';
      const buffer = Buffer.alloc(size - offset);
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      offset += n;
      return buffer.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  };
  const first = readNew();
  const cut = first.lastIndexOf('\n') + 1;
  partial = first.slice(cut);
  ctx.out(tailLines(first.slice(0, cut), Number(count)).map((l) => l + '\n').join(''));
  for (;;) {
    const running = jobState(jobDir) === 'running';
    const text = partial + readNew();
    const end = running ? text.lastIndexOf('\n') + 1 : text.length;
    if (end > 0) ctx.out(text.slice(0, end) + (running || text.endsWith('\n') ? '' : '\n'));
    partial = text.slice(end);
    if (!running) return EXIT_OK;
    await sleep(100);
  }
}

export interface ListRow {
  name: string;
  status: string;
  mode: string;
  parent: string;
  age: string;
  started_at: string | null;
  ended_at: string | null;
}

export function listRows(env: NodeJS.ProcessEnv, all: boolean, nowS: number = Date.now() / 1000): ListRow[] {
  const dirs = projectJobs(logicalCwd(env), env);
  const states = jobStates(dirs);
  const rows: (ListRow & { sortKey: number })[] = [];
  dirs.forEach((jobDir, i) => {
    const job = readJobRecord(jobDir) ?? {};
    const status = states[i] ?? 'unknown';
    const startedText = readText(jobFile(jobDir, 'started_at'));
    const endedText = readText(jobFile(jobDir, 'ended_at'));
    const started = parseUtc(startedText);
    const ended = parseUtc(endedText);
    const since = status === 'running' ? started : (ended ?? started);
    if (!all && status !== 'running' && (since === undefined || nowS - since > RECENT_S)) return;
    rows.push({
      sortKey: started ?? 0,
      name: basename(jobDir),
      status,
      mode: job.mode ?? '-',
      parent: job.parent ? basename(job.parent) : '-',
      age: since !== undefined ? formatAge(nowS - since) : '-',
      started_at: startedText?.trim() || null,
      ended_at: endedText?.trim() || null,
    });
  });
  rows.sort((a, b) => a.sortKey - b.sortKey || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return rows.map(({ sortKey: _sortKey, ...row }) => row);
}

export function formatListTable(rows: ListRow[]): string {
  if (rows.length === 0) return 'no jobs in this project\n';
  const table = [['NAME', 'STATUS', 'MODE', 'PARENT', 'AGE'], ...rows.map((r) => [r.name, r.status, r.mode, r.parent, r.age])];
  const widths = [0, 1, 2, 3].map((i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  return table
    .map((row) => [...[0, 1, 2, 3].map((i) => (row[i] ?? '').padEnd(widths[i] ?? 0)), row[4] ?? ''].join('  ') + '\n')
    .join('');
}

export async function cmdList(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], ['--all', '--json']);
  if (args.positional.length > 0) throw usageError('list takes no job name');
  const rows = listRows(ctx.env, args.flags.has('--all'));
  ctx.out(args.flags.has('--json') ? JSON.stringify(rows) + '\n' : formatListTable(rows));
  return EXIT_OK;
}

export async function cmdProfiles(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], []);
  if (args.positional.length > 0) throw usageError('profiles takes no arguments');
  const profiles = [...loadProfiles(logicalCwd(ctx.env), ctx.env).values()]
    .filter((p) => p.enabled)
    .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : 0));
  ctx.out(
    profiles
      .map((p) => `${p.name}\n  description: ${p.description.split(/\s+/).filter(Boolean).join(' ')}\n  source: ${p.source}\n`)
      .join('') || 'no profiles found\n',
  );
  return EXIT_OK;
}

export async function cmdRm(argv: string[], ctx: Context): Promise<number> {
  const jobDir = findJob(oneName(parseArgs(argv, [], []), 'rm'), ctx.env);
  const name = basename(jobDir);
  const lockFd = takeJobLock(jobDir, `job ${name} is running; kill it first`, ctx.timings.lockS);
  try {
    const job = readJobRecord(jobDir) ?? {};
    for (const path of findSessionFiles(job.session_dir ?? '', name)) removeFile(path);
    removeFile(socketPath(jobDir));
    rmSync(jobDir, { recursive: true, force: true });
  } finally {
    closeSync(lockFd);
  }
  ctx.out(`removed: ${name}\n`);
  return EXIT_OK;
}

/** Bash completion (zsh: after `autoload bashcompinit && bashcompinit`): commands, options, job names. */
export const BASH_COMPLETION = `_prun_job() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "run resume wait result steer abort kill status peek list profiles rm completion --help --version" -- "$cur"))
    return
  fi
  case "$cmd" in
    run) COMPREPLY=($(compgen -W "--profile --name --background --timeout --fork --model --thinking --cwd" -- "$cur")) ;;
    resume|wait|result|steer|abort|kill|status|peek|rm)
      if [ "$COMP_CWORD" -eq 2 ]; then
        COMPREPLY=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur"))
      fi ;;
  esac
}
complete -F _prun_job prun-job
`;

export async function cmdCompletion(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], []);
  if (args.positional.length !== 1 || !['bash', 'zsh'].includes(args.positional[0] as string)) {
    throw usageError('completion needs a shell: bash or zsh');
  }
  ctx.out(args.positional[0] === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${BASH_COMPLETION}` : BASH_COMPLETION);
  return EXIT_OK;
}

/** Job names of the current project, one a line, for shell completion. */
export async function cmdNames(_argv: string[], ctx: Context): Promise<number> {
  ctx.out(projectJobs(logicalCwd(ctx.env), ctx.env).map((dir) => basename(dir) + '\n').join(''));
  return EXIT_OK;
}

export const COMMANDS: Record<string, (argv: string[], ctx: Context) => Promise<number>> = {
  run: cmdRun,
  resume: cmdResume,
  wait: cmdWait,
  result: cmdResult,
  steer: cmdSteer,
  abort: cmdAbort,
  kill: cmdKill,
  status: cmdStatus,
  peek: cmdPeek,
  list: cmdList,
  profiles: cmdProfiles,
  rm: cmdRm,
  completion: cmdCompletion,
  __names: cmdNames,
};

export type { ParsedArgs };
