import { closeSync } from 'node:fs';
import { parseArgs, readMessage, runTimeout } from '../args.js';
import { CommandError, usageError } from '../errors.js';
import { checkDepth, findJob, isDir } from '../jobs.js';
import { takeJobLock } from '../lock.js';
import { findSessionFiles } from '../paths.js';
import { readJobRecord, type JobRecord } from '../state.js';
import type { Context } from './context.js';
import { startRun } from './start.js';

export async function cmdResume(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'resume');
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
