// One driver per batch directory: a kernel flock(2) on `<dir>/driver.lock`, held on a descriptor
// this process keeps open for its whole life. The kernel drops the lock when the process ends
// however it ends (SIGKILL included), so there is nothing to go stale. The file's content (pid
// and start time of the holder) only names the holder in the refusal; the lock is the truth.
import { closeSync, constants, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { FlockUnavailableError, readHead, sleepSync, tryFlock } from '@prun/kit/fs';
import { BatchError, EXIT } from './errors.js';
import { isRunning, processStartTime } from './units.js';

export const LOCK_FILE = 'driver.lock';

/** The holder a lock file names: `<pid> <start time>`. */
export function readLockHolder(path: string): { pid: number; start: string | null } | null {
  // Non-blocking and bounded: a FIFO in the lock's place names no holder instead of hanging.
  const head = readHead(path, { maxBytes: 256 });
  if (!head.ok) return null;
  const [pid, start] = head.text.trim().split(/\s+/);
  if (pid === undefined || !/^\d+$/.test(pid)) return null;
  return { pid: Number(pid), start: start ?? null };
}

/** The pid of the live process that a lock file names, or null (no file, or its holder is gone). */
export function liveLockHolder(path: string): number | null {
  const holder = readLockHolder(path);
  if (holder === null || !isRunning(holder.pid)) return null;
  if (holder.start !== null && processStartTime(holder.pid) !== holder.start) return null;
  return holder.pid;
}

/** The refusal (exit 101) of a second driver: the batch directory and the holder's pid when known. */
export function drivenBy(batchDir: string, pid: number | null): BatchError {
  const who = pid === null ? 'another prun' : `prun pid ${pid}`;
  return new BatchError(`${batchDir} is being driven by ${who}; wait for it, or watch it with prun status`, EXIT.busy);
}

/**
 * Take the driver lock of a batch directory, or refuse at once (exit 101) naming the holder's
 * pid. Returns the descriptor, which the caller keeps open until it exits.
 */
export function takeDriverLock(lockPath: string, batchDir: string): number {
  let fd: number;
  try {
    fd = openSync(lockPath, constants.O_RDWR | constants.O_CREAT, 0o644);
  } catch (error) {
    throw new BatchError(`cannot open the batch's lock file ${lockPath}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, EXIT.usage);
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new BatchError(`the batch's lock file ${lockPath} is not a regular file`, EXIT.usage);
  }
  let attempt;
  try {
    attempt = tryFlock(fd, 'exclusive');
  } catch (error) {
    closeSync(fd);
    if (error instanceof FlockUnavailableError) throw new BatchError(error.message, EXIT.usage);
    throw error;
  }
  if (attempt === 'unsupported') {
    closeSync(fd);
    throw new BatchError(`the file system of ${batchDir} does not support flock; put the batch directory on a local file system`, EXIT.usage);
  }
  if (attempt === 'busy') {
    closeSync(fd);
    // The holder writes its pid right after taking the lock: give it a moment to appear.
    let holder = readLockHolder(lockPath);
    for (let i = 0; holder === null && i < 20; i += 1) {
      sleepSync(10);
      holder = readLockHolder(lockPath);
    }
    throw drivenBy(batchDir, holder === null ? null : holder.pid);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid} ${processStartTime(process.pid) ?? ''}\n`, 0);
  return fd;
}
