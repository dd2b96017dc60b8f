import { closeSync, mkdirSync, rmSync } from 'node:fs';
import { isRegularFile } from '@prun/kit/fs';
import { join, resolve } from 'node:path';
import { parseArgs, readMessage, runTimeout } from '../args.js';
import { CommandError, usageError } from '../errors.js';
import { checkDepth, defaultName, isDir, validateName } from '../jobs.js';
import { takeJobLock } from '../lock.js';
import { expandUser } from '@prun/kit/py';
import { checkSocketPath, jobFile, jobsDir, logicalCwd, sessionsDir } from '../paths.js';
import { appendPrompt, DEFAULT_PROFILE, loadProfiles, pickProfile, profileArgs, resolveModel, resolveThinking } from '../profiles.js';
import type { JobRecord } from '../state.js';
import { utcNow, writeAtomic } from '../text.js';
import type { Context } from './context.js';
import { startRun } from './start.js';

/** The session file `--fork` starts from; refused before anything is created. */
function forkSession(env: NodeJS.ProcessEnv): string {
  const fork = env['PI_SESSION_FILE'] || null;
  if (!fork) throw new CommandError('--fork needs PI_SESSION_FILE, which is not set in this environment');
  if (!isRegularFile(fork)) throw new CommandError(`--fork: PI_SESSION_FILE does not exist: ${fork}`);
  return fork;
}

/** Create the job's directory under its given name, or a free default name. */
function createJobDir(root: string, name: string | undefined, profileName: string): string {
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
    return name;
  }
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const candidate = defaultName(profileName);
    try {
      mkdirSync(join(root, candidate));
      return candidate;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  throw new CommandError('could not find a free job name; pass --name');
}

export async function cmdRun(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'run');
  const background = args.flags.has('--background');
  const timeout = runTimeout(args, background);
  const project = logicalCwd(ctx.env);
  let cwd = project;
  const cwdOption = args.values.get('--cwd');
  if (cwdOption !== undefined) {
    cwd = resolve(project, expandUser(cwdOption, ctx.env));
    if (!isDir(cwd)) throw usageError(`--cwd is not a directory: ${cwdOption}`);
  }
  const prompt = readMessage(args, 'prompt', ctx.readStdin);
  const fork = args.flags.has('--fork') ? forkSession(ctx.env) : null;
  const depth = checkDepth(ctx.env);
  const profile = pickProfile(loadProfiles(cwd, ctx.env), args.values.get('--profile') || DEFAULT_PROFILE);

  const root = jobsDir(project, ctx.env);
  // The socket path has the same length for every name in root.
  checkSocketPath(join(root, 'name'));
  mkdirSync(root, { recursive: true });
  const name = createJobDir(root, args.values.get('--name'), profile.name);
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
  return startRun({ jobDir, lockFd, job, prompt, background, timeout, runKind: 'new' }, ctx, {
    // As in the original, a new job whose run could not start leaves nothing behind.
    onBindFailure: () => rmSync(jobDir, { recursive: true, force: true }),
  });
}
