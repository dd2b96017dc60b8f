// A machine whose kernel refuses one system call: a seccomp filter, installed by perl (no module)
// before it execs the command, answers that call with EPERM in the command and everything it
// starts, as a container runtime's filter or a kernel without unprivileged namespaces would.
import { spawnSync } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { perlSyscallsFromElf, resolveLaunchTools } from '../src/isolation.js';

/**
 * argv: the system call's number, prctl's, then the command. The filter: load the call's number
 * (seccomp_data.nr, offset 0); equal: SECCOMP_RET_ERRNO | EPERM, else SECCOMP_RET_ALLOW. Then
 * PR_SET_NO_NEW_PRIVS (38; a user's filter needs it) and PR_SET_SECCOMP (22) with
 * SECCOMP_MODE_FILTER (2).
 */
const REFUSE_SCRIPT = `
my ($nr, $prctl) = map { $_ + 0 } splice(@ARGV, 0, 2);
my $filter = pack('SCCL', 0x20, 0, 0, 0) . pack('SCCL', 0x15, 0, 1, $nr) . pack('SCCL', 0x06, 0, 0, 0x00050000 | 1) . pack('SCCL', 0x06, 0, 0, 0x7fff0000);
my $prog = pack('S x![P] P', 4, $filter);
syscall($prctl, 38, 1, 0, 0, 0) == 0 or die "no_new_privs: $!\\n";
syscall($prctl, 22, 2, $prog, 0, 0) == 0 or die "seccomp: $!\\n";
exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\\n";
`;

const tools = resolveLaunchTools({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
const numbers = process.platform === 'linux' && isAbsolute(tools.perl) ? perlSyscallsFromElf(tools) : null;

/** The words that run a command with the system call `nr` refused (null: prctl's number not known here). */
export function refusing(nr: number): readonly string[] | null {
  return numbers === null ? null : [tools.perl, '-e', REFUSE_SCRIPT, String(nr), String(numbers.prctl)];
}

/** The words that run a command with unshare(2) refused (null: no known numbers here). */
export const refusingUnshare: readonly string[] | null = numbers === null ? null : refusing(numbers.unshare);

/**
 * pselect6(2)'s number, which perl's four-argument select makes (and no other program of a
 * dispatch here does): by Node's architecture, where known.
 */
export const PSELECT6: number | undefined = ({ x64: 270, arm64: 72, riscv64: 72, loong64: 72 } as Record<string, number>)[process.arch];

/** Why a test of a refused unshare(2) cannot run here, or null. */
export const noRefusal: string | null =
  refusingUnshare === null
    ? "skipped: this perl's ELF header gives no system call numbers"
    : spawnSync(refusingUnshare[0]!, [...refusingUnshare.slice(1), tools.unshare, '--pid', '--fork', 'true'], { encoding: 'utf8' }).stderr.includes('Operation not permitted')
      ? null
      : 'skipped: no seccomp filter can refuse unshare(2) here';
