// A kernel flock(2) on a descriptor the caller owns, taken through util-linux `flock` (Node has
// no flock binding). The lock belongs to the open file description, so it stays held after the
// helper exits and is released only when the caller closes the descriptor or dies (SIGKILL
// included): nothing can go stale the way a pid file does.
import { spawnSync } from 'node:child_process';
import { constants } from 'node:os';

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

// One flock(2) per descriptor in a single perl process (perl-base is on every Debian-like system);
// a shell loop over util-linux flock is the fallback. Either way the lock lands on the caller's
// descriptors, as with tryFlock. The program loads no module: `use Fcntl` and `$!{EWOULDBLOCK}`
// made perl find and compile Fcntl, Exporter, XSLoader and Errno at every call (about 7 ms of
// CPU). flock(2)'s LOCK_SH (1) and LOCK_NB (4) are the same on every Linux; EWOULDBLOCK is not
// (alpha differs), so Node's own errno table passes it as the first argument.
export const PERL_SHARED =
  'my $busy = shift; for my $fd (@ARGV) { if (open(my $fh, "<&=", $fd)) { print flock($fh, 1 | 4) ? "0\\n" : $! + 0 == $busy ? "1\\n" : "2\\n" } else { print "2\\n" } }';
const SHELL_SHARED = 'for f do flock -sn "$f"; echo $?; done';

/**
 * Try once, without waiting, to lock each of `fds` shared, with one helper process for all of
 * them (a listing over hundreds of locked files stays fast). Same answers as tryFlock, in order.
 */
export function tryFlockSharedMany(fds: readonly number[]): FlockAttempt[] {
  if (fds.length === 0) return [];
  if (fds.length === 1) return [tryFlock(fds[0] as number, 'shared')];
  const args = fds.map((_fd, i) => String(i + 3));
  const options = { stdio: ['ignore', 'pipe', 'ignore', ...fds] as ('ignore' | 'pipe' | number)[], encoding: 'utf8' as const };
  let result = spawnSync('perl', ['-e', PERL_SHARED, String(constants.errno.EWOULDBLOCK), ...args], options);
  if (result.error || result.status !== 0) result = spawnSync('sh', ['-c', SHELL_SHARED, 'sh', ...args], options);
  if (result.error) throw new FlockUnavailableError(`cannot run util-linux flock (${result.error.message}); install util-linux`);
  const codes = result.stdout.split('\n').filter(Boolean);
  return fds.map((_fd, i) => {
    const code = codes[i];
    if (code === '0') return 'acquired';
    if (code === '1') return 'busy';
    return 'unsupported';
  });
}

/** Block this thread for `ms` milliseconds: the pause between two attempts at a lock. */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
