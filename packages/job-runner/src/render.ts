// What the commands print: the result block and its JSON form, the status lines, the list table,
// the profile list. Plain functions from job data to text; the commands do the writing.
import { basename } from 'node:path';
import { findSessionFiles, jobFile } from './paths.js';
import type { Profile } from './profiles.js';
import type { ListRow } from './jobs.js';
import { formatResultBlock, jobState, modelLabel, readJobRecord, resultFields } from './state.js';
import { formatSeconds, readText, shellQuote } from './text.js';

export interface ResultDocument {
  name: string;
  status: string;
  profile: string;
  model: string;
  duration_s: number | null;
  output: string;
}

export function resultDocument(jobDir: string, status: string): ResultDocument {
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

/** The result block (`wait`, `result`, a foreground `run`), or its JSON document. */
export function renderResult(jobDir: string, status: string, json: boolean): string {
  return json ? JSON.stringify(resultDocument(jobDir, status)) + '\n' : formatResultBlock(resultFields(jobDir, status));
}

/** `wait --timeout` passed with the job still running. */
export function renderStillRunning(name: string, waitedS: number | undefined, lastProgress: string | undefined, json: boolean): string {
  if (json) return JSON.stringify({ name, status: 'running', waited_s: waitedS, last_progress: lastProgress ?? null }) + '\n';
  return `job: ${name}\nstatus: running\nwaited_s: ${formatSeconds(waitedS)}\n${lastProgress !== undefined ? `last_progress: ${lastProgress}\n` : ''}`;
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

export function statusDocument(jobDir: string, env?: NodeJS.ProcessEnv): StatusDocument {
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

export function formatStatus(doc: StatusDocument): string {
  let text = Object.entries(doc)
    .map(([k, v]) => `${k}: ${String(v)}\n`)
    .join('');
  if (doc.status === 'running') text += 'note: open the session in pi only after the job stops\n';
  return text;
}

export function formatListTable(rows: ListRow[]): string {
  if (rows.length === 0) return 'no jobs in this project\n';
  const table = [['NAME', 'STATUS', 'MODE', 'PARENT', 'AGE'], ...rows.map((r) => [r.name, r.status, r.mode, r.parent, r.age])];
  const widths = [0, 1, 2, 3].map((i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  return table
    .map((row) => [...[0, 1, 2, 3].map((i) => (row[i] ?? '').padEnd(widths[i] ?? 0)), row[4] ?? ''].join('  ') + '\n')
    .join('');
}

export function formatProfiles(profiles: Profile[]): string {
  const sorted = profiles
    .filter((p) => p.enabled)
    .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : 0));
  return (
    sorted.map((p) => `${p.name}\n  description: ${p.description.split(/\s+/).filter(Boolean).join(' ')}\n  source: ${p.source}\n`).join('') ||
    'no profiles found\n'
  );
}

/** Lines `count` from the end of a text, without the empty piece after a final newline. */
export function tailLines(text: string, count: number): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return count ? lines.slice(-count) : [];
}
