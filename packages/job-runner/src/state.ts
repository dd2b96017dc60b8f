// A job's recorded state: its status, its result block and the record of a run's end.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { holdShared, type LockAttempt } from './lock.js';
import { jobFile } from './paths.js';
import { appendText, localClock, parseUtc, readInt, readJson, readText, utcNow, writeAtomic } from './text.js';

export const RESULT_DELIMITER = '--- multi-agent ---';

export const STATUSES = ['running', 'done', 'failed', 'aborted', 'timeout', 'killed', 'died', 'unknown'] as const;
export type JobStatus = (typeof STATUSES)[number] | (string & {});

/** job.json as both programs write it. */
export interface JobRecord {
  name?: string | undefined;
  profile?: string | undefined;
  profile_source?: string | undefined;
  cwd?: string | undefined;
  project?: string | undefined;
  session_dir?: string | undefined;
  parent?: string | null | undefined;
  depth?: number | undefined;
  model?: string | null | undefined;
  thinking?: string | null | undefined;
  fork?: string | null | undefined;
  pi_args?: string[] | undefined;
  created_at?: string | undefined;
  mode?: string | undefined;
  timeout?: number | null | undefined;
  run_kind?: string | undefined;
  [key: string]: unknown;
}

const STRING_FIELDS = ['name', 'profile', 'profile_source', 'cwd', 'project', 'session_dir', 'created_at', 'mode', 'run_kind'] as const;
const NULLABLE_STRING_FIELDS = ['parent', 'model', 'thinking', 'fork'] as const;

/**
 * Check a parsed job.json field by field: unknown keys are kept, and a field of the wrong type
 * reads as missing instead of discarding the whole record. A plain function rather than a zod
 * schema because `list` and the runner read job.json on their start-up path, where loading zod
 * alone would cost more than the whole command.
 */
export function toJobRecord(value: unknown): JobRecord | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const record: JobRecord = { ...(value as Record<string, unknown>) };
  for (const key of STRING_FIELDS) if (typeof record[key] !== 'string') delete record[key];
  for (const key of NULLABLE_STRING_FIELDS) if (record[key] !== null && typeof record[key] !== 'string') delete record[key];
  if (typeof record.depth !== 'number') delete record.depth;
  if (record.timeout !== null && typeof record.timeout !== 'number') delete record.timeout;
  if (!Array.isArray(record.pi_args) || !record.pi_args.every((arg) => typeof arg === 'string')) delete record.pi_args;
  return record;
}

export function readJobRecord(jobDir: string): JobRecord | undefined {
  return toJobRecord(readJson(jobFile(jobDir, 'job.json')));
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
