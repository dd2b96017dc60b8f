import { isPidAlive, readHead, type HeadProblem } from '@prun/kit/fs';
import type { PathLike } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILES } from './names.js';
import { firstLine } from './result.js';

/** The largest state entry a reader accepts, inclusive (64 KiB). */
export const MAX_ENTRY_BYTES = 65536;

/**
 * Why an entry could not be read: `absent`, `NotARegularFile`, `EntryTooLarge`, or the Node
 * error code (`EACCES`, `ENOTDIR`, `ELOOP`, ...) of the failing call.
 */
export type EntryProblem = HeadProblem;

export type EntryRead = { ok: true; text: string; bytes: Buffer } | { ok: false; problem: EntryProblem };

/**
 * Read a small file without ever blocking or throwing (@prun/kit/fs's readHead): it must be a
 * regular file (checked before and after a non-blocking open, so a FIFO or device is refused,
 * not waited on), at most `maxBytes` long (larger → `EntryTooLarge`, no truncated value).
 */
export function readSmallFile(path: PathLike, maxBytes: number = MAX_ENTRY_BYTES): EntryRead {
  const read = readHead(path, { maxBytes, overflow: 'refuse' });
  return read.ok ? { ok: true, text: read.text, bytes: read.bytes } : read;
}

/**
 * `readSmallFile` of one entry of a unit state directory. A Buffer `unitDir` reaches units whose
 * names are not valid UTF-8.
 */
export function readStateEntry(unitDir: string | Buffer, name: string, maxBytes: number = MAX_ENTRY_BYTES): EntryRead {
  const path = typeof unitDir === 'string' ? join(unitDir, name) : Buffer.concat([unitDir, Buffer.from(`/${name}`)]);
  return readSmallFile(path, maxBytes);
}

/**
 * The result path a unit's `result-file` names, as monitors use it: its first line, with a
 * trailing CR dropped. Null when the entry is missing, unreadable, or its first line is empty.
 */
export function readResultPathEntry(unitDir: string): string | null {
  const entry = readStateEntry(unitDir, STATE_FILES.resultFile);
  if (!entry.ok) return null;
  let line = firstLine(entry.text);
  if (line.endsWith('\r')) line = line.slice(0, -1);
  return line === '' ? null : line;
}

const DIGITS = /^[0-9]+$/;

/**
 * The pid in a unit's `dispatch-pid`: its first line, which must be all digits and positive.
 * Null when the entry is missing, blank or not a plain positive decimal number (`0`, `-1`,
 * `+12`, ` 12` are refused: signalling them would reach a process group, not a process).
 */
export function readDispatchPid(unitDir: string): number | null {
  const entry = readStateEntry(unitDir, STATE_FILES.dispatchPid);
  if (!entry.ok) return null;
  const line = firstLine(entry.text).replace(/\r$/, '');
  if (!DIGITS.test(line)) return null;
  const pid = Number(line);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}

/** Whether a process is alive, by signal 0. A process owned by another user (EPERM) is alive. */
export const isProcessAlive: (pid: number) => boolean = isPidAlive;
