import { closeSync, constants, fstatSync, openSync, readSync, statSync, type PathLike, type Stats } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILES } from './names.js';
import { firstLine } from './result.js';

/** The largest state entry a reader accepts, inclusive (64 KiB). */
export const MAX_ENTRY_BYTES = 65536;

/**
 * Why an entry could not be read: `absent`, `NotARegularFile`, `EntryTooLarge`, or the Node
 * error code (`EACCES`, `ENOTDIR`, `ELOOP`, ...) of the failing call.
 */
export type EntryProblem = 'absent' | 'NotARegularFile' | 'EntryTooLarge' | string;

export type EntryRead = { ok: true; text: string; bytes: Buffer } | { ok: false; problem: EntryProblem };

function problemOf(error: unknown): EntryProblem {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'absent';
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'Error';
}

/**
 * Read a small file without ever blocking or throwing: it must be a regular file (checked
 * before and after a non-blocking open, so a FIFO or device is refused, not waited on), at most
 * `maxBytes` long (larger → `EntryTooLarge`, no truncated value). Opened read-only.
 */
export function readSmallFile(path: PathLike, maxBytes: number = MAX_ENTRY_BYTES): EntryRead {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  if (!stats.isFile()) return { ok: false, problem: 'NotARegularFile' };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  try {
    if (!fstatSync(fd).isFile()) return { ok: false, problem: 'NotARegularFile' };
    // Only the bytes read are ever returned, so the buffer need not be zeroed first (a sweep
    // over thousands of units spends a quarter of its time zeroing otherwise).
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > maxBytes) return { ok: false, problem: 'EntryTooLarge' };
    const bytes = buffer.subarray(0, length);
    return { ok: true, text: bytes.toString('utf8'), bytes };
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  } finally {
    closeSync(fd);
  }
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

/**
 * Whether a process is alive, by signal 0. A process owned by another user (EPERM) is alive.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
