// A job's recorded state: its status, its result block and the record of a run's end.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import { holdShared, type LockAttempt } from './lock.js';
import { jobFile } from './paths.js';
import { appendText, localClock, parseUtc, readInt, readJson, readText, utcNow, writeAtomic } from './text.js';

export const RESULT_DELIMITER = '--- multi-agent ---';

export const STATUSES = ['running', 'done', 'failed', 'aborted', 'timeout', 'killed', 'died', 'unknown'] as const;
export type JobStatus = (typeof STATUSES)[number] | (string & {});

// A field of the wrong type reads as missing instead of discarding the whole record.
const str = z.string().optional().catch(undefined);
const nullableString = z.string().nullable().optional().catch(undefined);

/** job.json as both programs write it; unknown keys are kept, missing or odd ones tolerated. */
export const jobRecordSchema = z.looseObject({
  name: str,
  profile: str,
  profile_source: str,
  cwd: str,
  project: str,
  session_dir: str,
  parent: nullableString,
  depth: z.number().optional().catch(undefined),
  model: nullableString,
  thinking: nullableString,
  fork: nullableString,
  pi_args: z.array(z.string()).optional().catch(undefined),
  created_at: str,
  mode: str,
  timeout: z.number().nullable().optional().catch(undefined),
  run_kind: str,
});
export type JobRecord = z.infer<typeof jobRecordSchema>;

export function readJobRecord(jobDir: string): JobRecord | undefined {
  const parsed = jobRecordSchema.safeParse(readJson(jobFile(jobDir, 'job.json')));
  return parsed.success ? parsed.data : undefined;
}

/**
 * The status rule both programs share: a held lock means running; otherwise the recorded
 * status counts only once exit_code exists, and a run without one ended unrecorded (`died`).
 */
export function deriveStatus(lock: LockAttempt | 'missing', hasExitCode: boolean, statusText: string | undefined): JobStatus {
  if (lock === 'busy') return 'running';
  if (!hasExitCode) return 'died';
  return (statusText ?? '').trim() || 'unknown';
}

export function jobStates(jobDirs: string[]): JobStatus[] {
  const held = holdShared(jobDirs);
  try {
    return jobDirs.map((dir, i) =>
      deriveStatus(held.states[i] ?? 'missing', existsSync(jobFile(dir, 'exit_code')), readText(jobFile(dir, 'status'))),
    );
  } finally {
    held.release();
  }
}

export function jobState(jobDir: string): JobStatus {
  return jobStates([jobDir])[0] ?? 'unknown';
}

export function modelLabel(jobDir: string, job: JobRecord | undefined): string {
  const used = (readText(jobFile(jobDir, 'model')) ?? '').trim();
  return used || job?.model || '(pi default)';
}

export function durationS(jobDir: string, nowS: number = Date.now() / 1000): number | undefined {
  const started = parseUtc(readText(jobFile(jobDir, 'started_at')));
  const ended = parseUtc(readText(jobFile(jobDir, 'ended_at')));
  if (started === undefined) return undefined;
  return Math.trunc((ended ?? nowS) - started);
}

export interface ResultFields {
  output: string;
  name: string;
  status: string;
  profile: string;
  model: string;
  durationS: number | undefined;
}

/** The result block: the output, a blank line, the delimiter, then the fixed key lines. */
export function formatResultBlock(r: ResultFields): string {
  const output = r.output.replace(/\n+$/, '');
  return (
    `${output.trim() ? output : '(no output)'}\n\n${RESULT_DELIMITER}\n` +
    `name: ${r.name}\nstatus: ${r.status}\nprofile: ${r.profile}\nmodel: ${r.model}\n` +
    `duration_s: ${r.durationS === undefined ? '?' : r.durationS}\n`
  );
}

export function resultFields(jobDir: string, status: string): ResultFields {
  const job = readJobRecord(jobDir);
  return {
    output: readText(jobFile(jobDir, 'output.txt')) ?? '',
    name: basename(jobDir),
    status,
    profile: job?.profile ?? '?',
    model: modelLabel(jobDir, job),
    durationS: durationS(jobDir),
  };
}

export function appendProgress(jobDir: string, message: string): void {
  appendText(jobFile(jobDir, 'progress.log'), `${localClock()} ${message}\n`);
}

/**
 * Record the end of the current run; output undefined keeps output.txt. exit_code is written
 * last: once it exists, readers trust the status file and the rest of the run's state.
 */
export function recordEnd(jobDir: string, status: string, output?: string, detail?: string): void {
  if (output !== undefined) writeAtomic(jobFile(jobDir, 'output.txt'), output + (output ? '\n' : ''));
  writeAtomic(jobFile(jobDir, 'ended_at'), utcNow() + '\n');
  writeAtomic(jobFile(jobDir, 'status'), status + '\n');
  writeAtomic(jobFile(jobDir, 'exit_code'), `${status === 'done' ? 0 : 1}\n`);
  const runs = readInt(jobFile(jobDir, 'runs'));
  const message = `run ${runs === undefined ? 'None' : runs} ended: ${status}`;
  appendProgress(jobDir, message + (detail ? ` (${detail})` : ''));
}
