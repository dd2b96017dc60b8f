// The job's lock: a kernel flock(2) on `<job>/lock`, taken through util-linux `flock` on a
// descriptor this process owns. The lock belongs to the open file description, so it stays held
// after the helper exits and is released only when this process closes the descriptor or dies
// (SIGKILL included). Python's fcntl.flock sees exactly the same lock.
import { closeSync, constants, fstatSync, openSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { FlockUnavailableError, sleepSync, tryFlock, tryFlockSharedMany, type FlockAttempt } from '@prun/kit/fs';
import { CommandError } from './errors.js';
import { jobFile, stateDirOf } from './paths.js';

export type LockAttempt = FlockAttempt;

/** One flock(2) attempt through the kit's helper; a missing util-linux is the user's one line. */
export function flockFd(fd: number, mode: 'exclusive' | 'shared'): LockAttempt {
  try {
    return tryFlock(fd, mode);
  } catch (error) {
    if (error instanceof FlockUnavailableError) throw new CommandError(error.message);
    throw error;
  }
}

/** One helper process for many descriptors, so `list` over hundreds of jobs stays fast. */
export function flockSharedMany(fds: number[]): LockAttempt[] {
  try {
    return tryFlockSharedMany(fds);
  } catch (error) {
    if (error instanceof FlockUnavailableError) throw new CommandError(error.message);
    throw error;
  }
}

/**
 * Take the job's lock exclusively and return its descriptor.
 * Readers hold it shared for a moment and starters hand it to a runner, so a busy lock is retried
 * for lockS seconds before failing with busyMessage.
 */
export function takeJobLock(jobDir: string, busyMessage: string, lockS: number): number {
  const name = basename(jobDir);
  const path = jobFile(jobDir, 'lock');
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
  } catch {
    throw new CommandError(`job ${name} was removed`);
  }
  try {
    const end = Date.now() + lockS * 1000;
    for (;;) {
      const attempt = flockFd(fd, 'exclusive');
      if (attempt === 'acquired') break;
      if (attempt === 'unsupported') {
        throw new CommandError(
          `flock does not work on ${stateDirOf(jobDir)}; set XDG_STATE_HOME to a local file system`,
        );
      }
      if (Date.now() >= end) throw new CommandError(busyMessage);
      sleepSync(50);
    }
    // `rm` may have removed the job while this command waited.
    let same = false;
    try {
      same = statSync(path).ino === fstatSync(fd).ino;
    } catch {
      same = false;
    }
    if (!same) throw new CommandError(`job ${name} was removed`);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/**
 * Open each job's lock read-only and take it shared. The result says per job whether a runner
 * holds it (`busy`). Descriptors that got the lock keep it until `release` is called, so the
 * files read meanwhile form a consistent snapshot.
 */
export function holdShared(jobDirs: string[]): { states: (LockAttempt | 'missing')[]; release: () => void } {
  const fds: (number | undefined)[] = jobDirs.map((dir) => {
    try {
      return openSync(jobFile(dir, 'lock'), constants.O_RDONLY);
    } catch {
      return undefined;
    }
  });
  const open = fds.filter((fd): fd is number => fd !== undefined);
  const attempts: LockAttempt[] = [];
  // Chunks keep the helper's descriptor table small.
  for (let i = 0; i < open.length; i += 200) attempts.push(...flockSharedMany(open.slice(i, i + 200)));
  let next = 0;
  const states = fds.map((fd) => (fd === undefined ? ('missing' as const) : (attempts[next++] ?? 'unsupported')));
  return {
    states,
    release: () => {
      for (const fd of open) {
        try {
          closeSync(fd);
        } catch {
          // Closed already.
        }
      }
    },
  };
}
