// What the tests that count isolated launch chains share (one-chain.test.ts, reserve.test.ts,
// chain-links.test.ts): whether this machine gives the dispatcher a PID namespace, and a PATH
// whose `perl` and `unshare` record each start, then run the real ones.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { HELPER_SCRIPT, INIT_SCRIPT, LAUNCHER_SCRIPT, NAMESPACE_LAUNCHER_SCRIPT, planLaunch, resolveLaunchTools } from '../src/isolation.js';
import { PACKAGE_DIR, type Root } from './harness.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const { unshare: realUnshare, perl: realPerl } = resolveLaunchTools({ PATH });
const plan = planLaunch('auto', process.platform, process.getuid?.() === 0);

/**
 * The counting perl: a C program, so that its file is an ELF executable of this machine, as
 * perl's is (the plan reads prctl's, unshare(2)'s and mount(2)'s numbers from that header; a
 * script would give the plan setpriv's chain). Each start writes its argv, after a monotonic
 * timestamp, NUL-separated, to a file of its own in the `starts` directory beside it, then execs
 * the real perl with the same argv and environment.
 */
const COUNTING_PERL_C = `#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char self[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash != NULL) *slash = 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (int i = 0; i < 100; i++) {
      snprintf(path, sizeof path, "%s/starts/%d.%d", self, (int)getpid(), i);
      int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) continue;
      dprintf(fd, "%lld%c", (long long)now.tv_sec * 1000000000LL + now.tv_nsec, 0);
      for (int a = 0; a < argc; a++) write(fd, argv[a], strlen(argv[a]) + 1);
      close(fd);
      break;
    }
  }
  execv(REAL_PERL, argv);
  return 127;
}
`;

/**
 * The counting perl, built once for this source and this real perl and kept in the package's
 * node_modules/.cache (null: no C compiler here, or no perl). Built in a directory of its own
 * and renamed into place, so test files importing this at once never see half a file.
 */
function buildCountingPerl(): string | null {
  if (process.platform !== 'linux' || !isAbsolute(realPerl)) return null;
  const key = createHash('sha256').update(`${realPerl}\0${COUNTING_PERL_C}`).digest('hex').slice(0, 16);
  const cache = join(PACKAGE_DIR, 'node_modules', '.cache', 'prun-counting-perl');
  const binary = join(cache, `perl-${key}`);
  if (existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'build-'));
  try {
    const source = join(dir, 'perl.c');
    writeFileSync(source, COUNTING_PERL_C);
    const built = spawnSync('cc', ['-O2', `-DREAL_PERL=${JSON.stringify(realPerl)}`, '-o', join(dir, 'perl'), source], { encoding: 'utf8' });
    if (built.status !== 0) return null;
    renameSync(join(dir, 'perl'), binary);
    return binary;
  } catch {
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const countingPerl = buildCountingPerl();

/** Why the isolated-chain tests cannot run here, or null. */
export const skip =
  plan.isolation.kind !== 'pid'
    ? `skipped: ${plan.isolation.reason}`
    : !isAbsolute(realUnshare)
      ? 'skipped: unshare is not on PATH'
      : countingPerl === null
        ? 'skipped: no C compiler (cc) to build the counting perl'
        : null;

/** A test's title, with the reason it is skipped here. */
export const title = (text: string): string => (skip === null ? text : `${text} (${skip})`);

/** Which of the chain's perl programs a start ran (by its `-e` text). */
export type PerlKind = 'launcher' | 'namespace-launcher' | 'init' | 'helper' | 'other';

export interface PerlStart {
  pid: number;
  kind: PerlKind;
  /** The words after `--` (the launcher's: dispatcher pid, directory, ...). */
  args: string[];
}

function kindOf(argv: readonly string[]): PerlKind {
  if (argv[1] !== '-e') return 'other';
  const script = argv[2];
  if (script === LAUNCHER_SCRIPT) return 'launcher';
  if (script === NAMESPACE_LAUNCHER_SCRIPT) return 'namespace-launcher';
  if (script === INIT_SCRIPT) return 'init';
  if (script === HELPER_SCRIPT) return 'helper';
  return 'other';
}

export interface CountingPath {
  path: string;
  /**
   * The isolated chains started, in order, by the pid of each one's leader: its launcher (with
   * no directory to lock: a keeper's launcher is not an isolated chain), which is the pid
   * `worker-pid-unverified` records (every later link either execs the next or is its child).
   */
  starts: () => number[];
  /** Every perl start, in order. */
  perlStarts: () => PerlStart[];
  /** The pids of the unshare program's starts (the launcher that exec'd it). */
  unshareStarts: () => number[];
}

/** A PATH whose `perl` and `unshare` record their starts, then run the real ones. */
export function countingPath(root: Root): CountingPath {
  if (countingPerl === null) throw new Error(skip ?? 'no counting perl');
  const bin = join(root.dir, 'counting-bin');
  const log = join(root.dir, 'unshare-starts');
  const perlLog = join(bin, 'starts');
  mkdirSync(perlLog, { recursive: true });
  // Written from inside a user namespace too (a chain run as another user).
  chmodSync(perlLog, 0o777);
  copyFileSync(countingPerl, join(bin, 'perl'));
  chmodSync(join(bin, 'perl'), 0o755);
  writeFileSync(join(bin, 'unshare'), `#!/bin/sh\necho $$ >> '${log}'\nexec '${realUnshare}' "$@"\n`, { mode: 0o755 });
  const perlStarts = (): PerlStart[] =>
    readdirSync(perlLog)
      .map((name) => {
        const [at, ...argv] = readFileSync(join(perlLog, name), 'utf8').split('\0').slice(0, -1);
        const dashes = argv.indexOf('--');
        return { at: BigInt(at!), start: { pid: Number(name.split('.')[0]), kind: kindOf(argv), args: dashes < 0 ? [] : argv.slice(dashes + 1) } };
      })
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .map(({ start }) => start);
  const unshareStarts = (): number[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map(Number)
      : [];
  const starts = (): number[] =>
    perlStarts()
      .filter((start) => (start.kind === 'launcher' || start.kind === 'namespace-launcher') && start.args[1] === '')
      .map((start) => start.pid);
  return { path: `${bin}:${PATH}`, starts, perlStarts, unshareStarts };
}
