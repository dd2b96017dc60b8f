import { closeSync, openSync, readSync, statSync, constants } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  STATE_FILES,
  firstLine,
  isProcessAlive,
  readDispatchPid,
  readResultPathEntry,
} from '@prun/unit-state';
import type { DispatchLiveness, UnitFacts } from './classify.js';

/** Enough of a result's first line for the FALLBACK header test (the header is short). */
const FIRST_LINE_BYTES = 4096;

export interface FileFacts {
  size: number;
  mtimeMs: number;
}

/** Size and mtime of a regular file (symlinks followed); null when absent or not a regular file. */
export function statRegularFile(path: string): FileFacts | null {
  try {
    const stats = statSync(path, { throwIfNoEntry: false });
    return stats?.isFile() ? { size: stats.size, mtimeMs: stats.mtimeMs } : null;
  } catch {
    return null;
  }
}

function readFirstLine(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return '';
  }
  try {
    const buffer = Buffer.alloc(FIRST_LINE_BYTES);
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    return firstLine(buffer.subarray(0, n).toString('utf8'));
  } catch {
    return '';
  } finally {
    closeSync(fd);
  }
}

export interface UnitObservation extends UnitFacts {
  /** The absolute result path the unit's `result-file` names, if any. */
  resultPath: string | null;
}

/**
 * Look at one state directory: the result its `result-file` names (resolved against `cwd`, as
 * the original did) and the tail. A directory or an empty file is not a present result.
 */
export function observeUnit(stateDir: string, cwd: string): UnitObservation {
  const entry = readResultPathEntry(stateDir);
  const resultPath = entry === null ? null : resolve(cwd, entry);
  const resultStat = resultPath === null ? null : statRegularFile(resultPath);
  const result =
    resultPath !== null && resultStat !== null && resultStat.size > 0
      ? { ...resultStat, firstLine: readFirstLine(resultPath) }
      : null;
  return { resultPath, result, tail: statRegularFile(join(stateDir, STATE_FILES.tail)) };
}

/** Liveness of the unit's dispatcher from `dispatch-pid` (only a plain positive decimal counts). */
export function probeDispatch(stateDir: string): DispatchLiveness {
  const pid = readDispatchPid(stateDir);
  if (pid === null) return 'unknown';
  return isProcessAlive(pid) ? 'alive' : 'dead';
}

/** File names in a state directory whose changes cannot change a decision (the live output). */
export const NOISY_STATE_FILES: ReadonlySet<string> = new Set([STATE_FILES.tail, STATE_FILES.tailStderr]);
