import { statSync } from 'node:fs';
import { readHead } from '@prun/kit/fs';
import { join, resolve } from 'node:path';
import {
  STATE_FILES,
  firstLine,
  isProcessAlive,
  readDispatchPid,
  readResultPathEntry,
  readSmallFile,
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

/**
 * The first line of a result, through @prun/kit/fs's bounded reader: opened non-blocking and
 * checked to be a regular file after the open (a FIFO swapped in after the stat is never
 * waited on), at most FIRST_LINE_BYTES read. Empty when it cannot be read.
 */
function readFirstLine(path: string): string {
  const head = readHead(path, { maxBytes: FIRST_LINE_BYTES });
  return head.ok ? firstLine(head.text) : '';
}

/** A state file that exists but cannot be used (a FIFO, a device, a directory, too large, unreadable). */
export interface UnusableStateFile {
  path: string;
  problem: string;
}

/** Called for a state file that is there but unusable; the monitor tells the user once. */
export type UnusableStateFileListener = (file: UnusableStateFile) => void;

/**
 * Why a state entry that read as nothing is unusable, or null when it is simply absent (or
 * holds no usable value). Only asked after a read gave nothing, so a normal look costs no
 * extra call.
 */
function whyUnusable(path: string): string | null {
  const read = readSmallFile(path);
  if (read.ok || read.problem === 'absent') return null;
  return read.problem;
}

export function reportUnusable(path: string, onUnusable: UnusableStateFileListener | undefined): void {
  if (onUnusable === undefined) return;
  const problem = whyUnusable(path);
  if (problem !== null) onUnusable({ path, problem });
}

export interface UnitObservation extends UnitFacts {
  /** The absolute result path the unit's `result-file` names, if any. */
  resultPath: string | null;
}

/**
 * Look at one state directory: the result its `result-file` names (resolved against `cwd`, as
 * the original did) and the tail. A directory or an empty file is not a present result.
 */
export function observeUnit(stateDir: string, cwd: string, onUnusable?: UnusableStateFileListener): UnitObservation {
  const entry = readResultPathEntry(stateDir);
  if (entry === null) reportUnusable(join(stateDir, STATE_FILES.resultFile), onUnusable);
  const resultPath = entry === null ? null : resolve(cwd, entry);
  const resultStat = resultPath === null ? null : statRegularFile(resultPath);
  const result =
    resultPath !== null && resultStat !== null && resultStat.size > 0
      ? { ...resultStat, firstLine: readFirstLine(resultPath) }
      : null;
  return { resultPath, result, tail: statRegularFile(join(stateDir, STATE_FILES.tail)) };
}

/** Liveness of the unit's dispatcher from `dispatch-pid` (only a plain positive decimal counts). */
export function probeDispatch(stateDir: string, onUnusable?: UnusableStateFileListener): DispatchLiveness {
  const pid = readDispatchPid(stateDir);
  if (pid === null) {
    reportUnusable(join(stateDir, STATE_FILES.dispatchPid), onUnusable);
    return 'unknown';
  }
  return isProcessAlive(pid) ? 'alive' : 'dead';
}

/** File names in a state directory whose changes cannot change a decision (the live output). */
export const NOISY_STATE_FILES: ReadonlySet<string> = new Set([STATE_FILES.tail, STATE_FILES.tailStderr]);
