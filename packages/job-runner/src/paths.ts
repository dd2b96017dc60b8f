// Where a job's state lives. Every path here is part of the contract with multi_agent.py.
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { expandUser } from '@prun/kit/py';
import { CommandError } from './errors.js';

type Env = NodeJS.ProcessEnv;

/** sun_path holds the socket path and its trailing NUL. */
const SUN_PATH_MAX = process.platform === 'darwin' || process.platform.includes('bsd') ? 104 : 108;

/** $PWD when it names the current directory, so a symlinked path keeps its name and its slug. */
export function logicalCwd(env: Env = process.env): string {
  const pwd = env['PWD'];
  const here = process.cwd();
  if (pwd && isAbsolute(pwd)) {
    try {
      const a = statSync(pwd);
      const b = statSync(here);
      if (a.dev === b.dev && a.ino === b.ino) return pwd;
    } catch {
      // Fall back to the real path.
    }
  }
  return here;
}

export function projectSlug(path: string): string {
  return path.replace(/[^A-Za-z0-9]/gu, '-').replace(/^-+/, '');
}

export function stateRoot(env: Env = process.env): string {
  const base = env['XDG_STATE_HOME'] || join(homedir(), '.local', 'state');
  return resolve(base, 'pi-multi-agent');
}

export function piAgentDir(env: Env = process.env): string {
  return expandUser(env['PI_CODING_AGENT_DIR'] || join('~', '.pi', 'agent'));
}

export function jobsDir(project: string, env: Env = process.env): string {
  return join(stateRoot(env), projectSlug(project), 'jobs');
}

export function sessionsDir(project: string, env: Env = process.env): string {
  return join(piAgentDir(env), 'multi-agent-sessions', projectSlug(project));
}

export function piBin(env: Env = process.env): string {
  return env['MULTI_AGENT_PI_BIN'] || 'pi';
}

export function jobFile(jobDir: string, name: string): string {
  return join(jobDir, name);
}

/** The state root that holds a job directory (`<root>/<project>/jobs/<name>`). */
export function stateDirOf(jobDir: string): string {
  return dirname(dirname(dirname(jobDir)));
}

/** The control socket: found from the job directory alone, fixed length thanks to the hash. */
export function socketPath(jobDir: string): string {
  const digest = createHash('sha256').update(Buffer.from(jobDir, 'utf8')).digest('hex').slice(0, 16);
  return join(stateDirOf(jobDir), 'sockets', `${digest}.sock`);
}

export function checkSocketPath(jobDir: string): void {
  if (Buffer.byteLength(socketPath(jobDir), 'utf8') >= SUN_PATH_MAX) {
    throw new CommandError('the socket path for this job is too long; set XDG_STATE_HOME to a shorter path');
  }
}

/** pi names a session file `<timestamp>_<id>.jsonl`; the timestamp has no `_`. */
export function findSessionFiles(sessionDir: string, name: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(sessionDir).sort();
  } catch {
    return [];
  }
  return entries.filter((entry) => sessionFileMatches(entry, name)).map((entry) => join(sessionDir, entry));
}

export function sessionFileMatches(entry: string, name: string): boolean {
  const suffix = `_${name}.jsonl`;
  if (!entry.endsWith(suffix)) return false;
  const stamp = entry.slice(0, entry.length - suffix.length);
  return stamp.length > 0 && !stamp.includes('_') && !/[\n]/.test(stamp);
}
