// Finding jobs: names, lookup across projects, the depth limit, and the job listing as data.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { isDirectory } from '@prun/kit/fs';
import { basename, join } from 'node:path';
import { NAME_RE } from './args.js';
import { CommandError, usageError } from './errors.js';
import { jobFile, jobsDir, logicalCwd, stateRoot } from './paths.js';
import { jobStates, readJobRecord, type JobStatus } from './state.js';
import { pyInt, pyRepr } from '@prun/kit/py';
import { formatAge, parseUtc, readText } from './text.js';
import { DEFAULT_MAX_DEPTH, RECENT_S } from './timing.js';

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

/** Python's os.path.isdir (kit's). */
export const isDir = isDirectory;

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

/** The job directories of a project, sorted by name. */
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

/**
 * multi_agent.py's `int(os.environ.get(name) or default)`, with `fallback` where int() raises:
 * Python's int() takes `1_0`, any Unicode decimal digit and its own whitespace set, so a hand
 * regex here would read as unset a depth the original refuses.
 */
function envInt(text: string | undefined, fallback: bigint): bigint {
  return text ? (pyInt(text) ?? fallback) : fallback;
}

/** The depth a new agent gets; refuses past MULTI_AGENT_MAX_DEPTH. */
export function checkDepth(env: NodeJS.ProcessEnv): number {
  const depth = envInt(env['MULTI_AGENT_DEPTH'], 0n);
  const limit = envInt(env['MULTI_AGENT_MAX_DEPTH'], BigInt(DEFAULT_MAX_DEPTH));
  if (depth >= limit) {
    throw new CommandError(`cannot start an agent: this caller is at depth ${depth} and MULTI_AGENT_MAX_DEPTH is ${limit}`);
  }
  return Number(depth + 1n);
}

/** One job as `list` shows it (and `list --json` prints it). */
export interface ListRow {
  name: string;
  status: JobStatus;
  mode: string;
  parent: string;
  age: string;
  started_at: string | null;
  ended_at: string | null;
}

export interface ListOptions {
  /** Also jobs that ended more than a day ago (`list --all`). */
  all?: boolean;
  /** The project directory; default: the logical current directory. */
  project?: string;
  env?: NodeJS.ProcessEnv;
  nowS?: number;
}

/**
 * The jobs of a project as data, in `list` order (oldest start first): what `prun-job list
 * --json` prints, for tools (shell completion, `prun`) that must not scrape the table.
 */
export function listJobs(options: ListOptions = {}): ListRow[] {
  const env = options.env ?? process.env;
  const nowS = options.nowS ?? Date.now() / 1000;
  const dirs = projectJobs(options.project ?? logicalCwd(env), env);
  const states = jobStates(dirs);
  const rows: (ListRow & { sortKey: number })[] = [];
  dirs.forEach((jobDir, i) => {
    const status = states[i] ?? 'unknown';
    const startedText = readText(jobFile(jobDir, 'started_at'));
    const endedText = readText(jobFile(jobDir, 'ended_at'));
    const started = parseUtc(startedText);
    const ended = parseUtc(endedText);
    const since = status === 'running' ? started : (ended ?? started);
    if (!options.all && status !== 'running' && (since === undefined || nowS - since > RECENT_S)) return;
    const job = readJobRecord(jobDir) ?? {};
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

/** The former name of listJobs, kept for callers of 0.1. */
export function listRows(env: NodeJS.ProcessEnv, all: boolean, nowS: number = Date.now() / 1000): ListRow[] {
  return listJobs({ env, all, nowS });
}

/** The names of a project's jobs, for shell completion. */
export function jobNames(env: NodeJS.ProcessEnv = process.env, project: string = logicalCwd(env)): string[] {
  return projectJobs(project, env).map((dir) => basename(dir));
}
