import { CliError } from '@prun/kit/cli';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT } from './errors.js';

export class CloneError extends CliError {
  constructor(message: string, exitCode: number) {
    super(message, { exitCode });
    this.name = 'CloneError';
  }
}

function git(args: string[], cwd?: string): { ok: boolean; detail: string } {
  const run = spawnSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (run.error) return { ok: false, detail: run.error.message };
  const lines = `${run.stderr}`.trim().split('\n').filter(Boolean);
  return { ok: run.status === 0, detail: lines.at(-1) ?? `git exited with code ${run.status}` };
}

/**
 * A throwaway clone for a code-writing unit: `git clone --local -c core.longpaths=true`, then
 * the remote removed so nothing the worker does can reach the original's remote by accident.
 * Refuses a destination that exists (anything at all there). Returns the absolute path.
 */
export function throwawayClone(repo: string, dir: string): string {
  const target = resolve(dir);
  let exists = existsSync(target);
  try {
    lstatSync(target);
    exists = true;
  } catch {
    // nothing there, not even a dangling link
  }
  if (exists) throw new CloneError(`clone destination already exists; use a fresh path: ${target}`, EXIT.usage);
  const source = resolve(repo);
  if (!existsSync(source)) throw new CloneError(`repository not found: ${source}`, EXIT.usage);
  const clone = git(['clone', '--quiet', '--local', '-c', 'core.longpaths=true', source, target]);
  if (!clone.ok) throw new CloneError(`git clone failed: ${clone.detail}`, EXIT.failed);
  const remotes = spawnSync('git', ['remote'], { cwd: target, encoding: 'utf8' });
  for (const remote of `${remotes.stdout ?? ''}`.split('\n').filter(Boolean)) {
    const removed = git(['remote', 'remove', remote], target);
    if (!removed.ok) throw new CloneError(`could not remove remote ${remote} from the clone: ${removed.detail}`, EXIT.failed);
  }
  return target;
}
