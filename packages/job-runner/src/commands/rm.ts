import { closeSync, rmSync } from 'node:fs';
import { basename } from 'node:path';
import { oneName, parseArgs } from '../args.js';
import { EXIT_OK } from '../errors.js';
import { findJob } from '../jobs.js';
import { takeJobLock } from '../lock.js';
import { findSessionFiles, socketPath } from '../paths.js';
import { readJobRecord } from '../state.js';
import { removeFile } from '../text.js';
import type { Context } from './context.js';

export async function cmdRm(argv: string[], ctx: Context): Promise<number> {
  const jobDir = findJob(oneName(parseArgs(argv, 'rm'), 'rm'), ctx.env);
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
