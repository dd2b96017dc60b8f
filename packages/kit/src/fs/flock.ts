// A kernel flock(2) on a descriptor the caller owns, taken through util-linux `flock` (Node has
// no flock binding). The lock belongs to the open file description, so it stays held after the
// helper exits and is released only when the caller closes the descriptor or dies (SIGKILL
// included): nothing can go stale the way a pid file does.
import { spawnSync } from 'node:child_process';

export type FlockAttempt = 'acquired' | 'busy' | 'unsupported';

export class FlockUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlockUnavailableError';
  }
}

/**
 * Try once, without waiting, to lock `fd` exclusively or shared. `busy`: another open file
 * description holds a conflicting lock. `unsupported`: the file system refuses flock (some
 * network mounts). Throws FlockUnavailableError when util-linux `flock` cannot be run.
 */
export function tryFlock(fd: number, mode: 'exclusive' | 'shared' = 'exclusive'): FlockAttempt {
  const result = spawnSync('flock', [mode === 'exclusive' ? '-xn' : '-sn', '3'], {
    stdio: ['ignore', 'ignore', 'ignore', fd],
  });
  if (result.error) throw new FlockUnavailableError(`cannot run util-linux flock (${result.error.message}); install util-linux`);
  if (result.status === 0) return 'acquired';
  if (result.status === 1) return 'busy';
  return 'unsupported';
}
