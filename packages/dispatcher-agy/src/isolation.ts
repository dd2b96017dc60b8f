/**
 * How the worker is started so that it sees none of prun's processes and nothing of it
 * outlives the dispatcher (the dispatcher README's "Isolation and no orphans" says what this
 * does and does not protect). The decisions and the launch command line are pure; `probe`
 * runs the tools once to learn what this machine allows.
 *
 * The launch chain, outermost first:
 *   setpriv --pdeathsig KILL   the kernel kills the chain when the dispatcher dies (any way);
 *                              absent where the launcher arms the signal itself (below)
 *   perl LAUNCHER              checks the dispatcher is still its parent, reports on fd 3;
 *                              without isolation it takes the directory lock itself; where
 *                              setpriv is not used for it (the usual isolated chain) or cannot
 *                              arm it (none on PATH, util-linux before 2.33), it arms the
 *                              parent-death signal itself (prctl), first, and reads it back
 *                              (PR_GET_PDEATHSIG): not armed, it refuses and starts nothing
 *   unshare ... --kill-child   (isolation) a new PID namespace with its own /proc; its child
 *                              dies with it (in the usual chain the launcher does this itself)
 *   setpriv --no-new-privs ... (isolation, only where the init cannot drop the capabilities
 *                              itself) drops every capability once /proc is mounted: with
 *                              CAP_SYS_ADMIN (root, or any uid inside a user namespace) the
 *                              worker could unmount its /proc and see the host's again
 *   perl INIT                  (isolation) PID 1 of the namespace: drops the capabilities
 *                              itself where it has prctl's number (bounding and ambient sets,
 *                              no_new_privs), checks /proc/self/status that no exec of it can
 *                              hold one (else refuses), says `ready`, waits for the worker's
 *                              directory and command on stdin, takes the directory lock the
 *                              whole worker tree then holds, starts agy as PID 2 in that
 *                              directory, reports its exact exit status on fd 3; when it
 *                              exits the kernel kills every process left in the namespace,
 *                              setsid'd ones included
 *   agy ...
 * The usual isolated chain is one perl process before agy (NAMESPACE_LAUNCHER_SCRIPT): the
 * launcher arms its own parent-death signal, then does what `unshare --pid --fork --mount-proc
 * --kill-child` (with `--user --map-current-user` for a user) does, by system call (unshare(2),
 * the maps, fork; in the child PR_SET_PDEATHSIG, the mounts), and its child is PID 1 and runs
 * the init's code (INIT_BODY) without an exec: one exec before agy, not three (perl LAUNCHER,
 * unshare, perl INIT) or setpriv's five. prctl's, unshare(2)'s and mount(2)'s numbers come from
 * the ELF header of the perl the chain execs (read, not run: `perlSyscallsFromElf`), so even the
 * first chain, which is the isolation probe, has them. Every step is checked (the signal read
 * back, each call's result, /proc/self naming PID 1, the capabilities from /proc/self/status):
 * a refused one is a `refused <why>` status line before `ready`, and the plan then probes the
 * unshare program's chain (LAUNCHER, unshare, INIT), and after it setpriv's, as before. A perl
 * that is no ELF file of a known machine (a shim script, an unknown architecture) keeps
 * setpriv's chain exactly.
 * An isolated chain is started before the state directory exists (parked at the init's `ready`):
 * for a process's first unit its `ready` is the isolation probe, so a standalone dispatch starts
 * one chain, not a probe chain and then the worker's (README, "Isolation and no orphans").
 * Without isolation the launcher stays as agy's keeper (a subreaper that kills the whole tree
 * when agy exits or the dispatcher dies), and agy runs in a process group of its own.
 *
 * The parent-death signal fires when the thread that forked the chain ends, not the process:
 * Node's child_process.spawn runs libuv's uv_spawn synchronously on the JavaScript thread that
 * calls it (never on the thread pool), and every chain is spawned from the main thread (the
 * bin, a hosted unit in a batch's supervisor, `prun dispatch`: none runs a dispatch in a
 * worker_threads Worker), which ends only with the process (`strace -f` of a dispatch and of a
 * batch's supervisor: the clone that starts each launcher is made by the thread whose tid is the
 * pid). A dispatch hosted in a Worker would have its chain killed when that Worker ends.
 */
import { execFile, spawnSync } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute } from 'node:path';
import { readHead, underParentDeath, which } from '@prun/kit/fs';
import { spawnErrorText } from './process.js';

export type IsolationSetting = 'auto' | 'off' | 'pid';

/** What the machine gives, decided once per dispatch before STATE-DIR. */
export interface LaunchPlan {
  /**
   * `initDrops`: the namespace's init drops the capabilities itself, and checks they are gone,
   * before it says `ready` (no `setpriv --no-new-privs ...` link); absent, setpriv drops them.
   * `byLauncher` (with `initDrops`): no unshare is exec'd; the launcher does what `unshare` spelled
   * so would (unshare(2), the user namespace's maps, fork, the mounts) by these system call
   * numbers, and its child is the init, without an exec (`NAMESPACE_LAUNCHER_SCRIPT`).
   */
  isolation: { kind: 'pid'; unshare: string[]; initDrops?: boolean; byLauncher?: NamespaceSyscalls } | { kind: 'none'; reason: string };
  /**
   * `setpriv --pdeathsig` works here: the kernel stops the chain (and the preflight's and the
   * quota refresh's helpers) when the dispatcher dies. Without it the launcher, and the perl
   * wrapper of each helper (`helperLaunch`), arm the signal themselves where prctl's number is
   * known (`parentDeathOf`).
   */
  parentDeath: boolean;
  /** perl runs the launcher (lock, status) and the namespace's init; without it, agy is started directly. */
  launcher: boolean;
  /** Where the chain's programs are (absent: each exec searches PATH). */
  tools?: LaunchTools;
  /**
   * prctl's system call number for this perl (0 or absent: not known), with which the keeper
   * makes itself a child subreaper and, without `parentDeath`, the launcher arms its own
   * parent-death signal; learned once per plan, from the ELF header of the perl the chain execs
   * (`perlPrctlFromElf`), or else from perl's own Config.
   */
  prctlSyscall?: number;
}

/** unshare(2)'s and mount(2)'s system call numbers for the chain's perl (`ArchSyscalls`). */
export interface NamespaceSyscalls {
  unshare: number;
  mount: number;
}

/** What binds the chain to the dispatcher's life; null: nothing (a SIGKILLed dispatcher leaves it). */
export interface ParentDeath {
  /** setpriv arms the signal before it execs the launcher; prctl: the launcher arms it itself. */
  by: 'setpriv' | 'prctl';
  /**
   * KILL for an isolated chain (unshare ignores TERM; its death ends the namespace through
   * --kill-child), TERM for the keeper, which then kills the tree it keeps before it exits.
   */
  signal: 'KILL' | 'TERM';
}

/** How `plan`'s chain is bound to the dispatcher's life (the `parent-death:` record says it). */
export function parentDeathOf(plan: LaunchPlan): ParentDeath | null {
  const signal = plan.isolation.kind === 'pid' ? 'KILL' : 'TERM';
  if (plan.parentDeath) return { by: 'setpriv', signal };
  // Only the perl launcher can make the call, and only with the number for its architecture.
  if (plan.launcher && (plan.prctlSyscall ?? 0) > 0) return { by: 'prctl', signal };
  return null;
}

/**
 * The launch chain's programs, found on PATH once when the plan is made and then exec'd by
 * absolute path: every link of every unit's chain used to search PATH again (an execve tried
 * in each directory before the right one). The records (`mechanism:`, `parent-death:`) keep
 * the programs' names; util-linux names itself by its basename in any message either way.
 */
export interface LaunchTools {
  setpriv: string;
  unshare: string;
  perl: string;
}

const BARE_TOOLS: LaunchTools = { setpriv: 'setpriv', unshare: 'unshare', perl: 'perl' };

/**
 * The chain's programs as `env`'s PATH finds them. Only a PATH of absolute directories finds
 * the same file from every working directory (the probe runs in ours, the chain in the unit's
 * scratch directory), so any other PATH, or a program not found, keeps the bare name and the
 * search at exec, as before.
 */
export function resolveLaunchTools(env: NodeJS.ProcessEnv): LaunchTools {
  const path = env['PATH'];
  if (path === undefined || path === '' || path.split(delimiter).some((dir) => !isAbsolute(dir))) return BARE_TOOLS;
  // Every directory is absolute: the working directory plays no part (a hosted unit never reads ours).
  const find = (name: string): string => which(name, { env, cwd: '/' }) ?? name;
  return { setpriv: find('setpriv'), unshare: find('unshare'), perl: find('perl') };
}

/** `command` under the kernel's parent-death `signal`, with setpriv from `tools`. */
export function diesWithParent(command: readonly string[], signal: 'KILL' | 'TERM', tools: LaunchTools = BARE_TOOLS): string[] {
  // kit's spelling of the wrapper (`setpriv --pdeathsig SIGNAL -- ...`), its program located.
  const [, ...options] = underParentDeath(command, signal);
  return [tools.setpriv, ...options];
}

/**
 * Starts one of the dispatcher's helpers (the preflight's `--version` and `models`, a quota
 * `/usage` refresh) where setpriv cannot arm the parent-death signal. argv: dispatcher pid,
 * prctl's system call number, the fd to report a failed exec on (0: none), then the command.
 * No module is loaded (see the launcher): PR_SET_PDEATHSIG is 1, PR_GET_PDEATHSIG 2, SIGKILL 9,
 * F_SETFD 2, FD_CLOEXEC 1 and ENOENT 2 on every Linux architecture. The signal survives the
 * exec, so the helper itself (the same pid) is killed with the dispatcher, as under setpriv; one
 * that the kernel does not read back as armed starts nothing (exit 121, the reason on stderr).
 */
export const HELPER_SCRIPT = `
my ($dispatcher, $prctl, $fd) = splice(@ARGV, 0, 3);
syscall($prctl, 1, 9, 0, 0, 0);
# Read back (PR_GET_PDEATHSIG, 2): a wrong number or a filter that refused the call leaves 0.
my $got = pack('i', 0);
syscall($prctl, 2, $got, 0, 0, 0);
if (unpack('i', $got) != 9) { print STDERR "parent-death signal not armed (reads back as ", unpack('i', $got), ")\\n"; exit 121; }
# A dispatcher that died before the call is no longer our parent: then nothing may start.
exit 121 if getppid() != $dispatcher;
# The report pipe closes with a successful exec (close-on-exec): only a failure writes to it.
my $report;
if ($fd > 0 && open($report, '>&=', $fd)) { fcntl($report, 2, 1); } else { undef $report; }
exec { $ARGV[0] } @ARGV;
my ($errno, $why) = ($! + 0, "$!");
# The errno, from which the dispatcher says what spawning the command bare would have said.
syswrite($report, $errno) if $report;
# Otherwise as setpriv's failed exec (util-linux's errexec): 127 for a missing file, else 126.
print STDERR "failed to execute $ARGV[0]: $why\\n";
exit($errno == 2 ? 127 : 126);
`;

/** The fd on which the helper wrapper reports a failed exec, where its caller listens (`helperLaunch`). */
export const HELPER_REPORT_FD = 3;

export interface HelperLaunch {
  argv: string[];
  /**
   * Set when `argv` is the perl wrapper with its report on `HELPER_REPORT_FD`: turns what it
   * reported (a failed exec's errno) into the launch error a bare spawn of the command gives
   * (`spawn <file> EACCES`), null for no report (the exec succeeded).
   */
  execFailure: ((report: string) => string | null) | null;
}

/**
 * A helper's command line (the preflight's commands, the quota `/usage` refresh): under the
 * kernel's parent-death signal wherever `plan` can bind anything, so a dispatcher killed while
 * one runs (the bin, or a batch's supervisor hosting the unit) leaves none behind. setpriv
 * where it arms the signal; else the perl wrapper that arms it itself (`HELPER_SCRIPT`, by the
 * decision `parentDeathOf` makes for the chain); else the command alone. Always SIGKILL: a
 * helper has nothing to clean up. With `report`, the wrapper reports a failed exec on
 * `HELPER_REPORT_FD` (the caller gives the child that pipe), so the caller can tell it from a
 * command that ran and failed, as it can for a bare spawn.
 */
export function helperLaunch(plan: LaunchPlan | null, command: readonly string[], dispatcherPid: number, report = false): HelperLaunch {
  const death = plan === null ? null : parentDeathOf(plan);
  if (plan === null || death === null) return { argv: [...command], execFailure: null };
  const tools = plan.tools ?? BARE_TOOLS;
  if (death.by === 'setpriv') return { argv: diesWithParent(command, 'KILL', tools), execFailure: null };
  const fd = report ? HELPER_REPORT_FD : 0;
  const argv = [tools.perl, '-e', HELPER_SCRIPT, '--', String(dispatcherPid), String(plan.prctlSyscall ?? 0), String(fd), ...command];
  return { argv, execFailure: report ? (text) => spawnFailure(command[0]!, text) : null };
}

/** `helperLaunch`'s command line alone, no report (quota's `/usage` refresh judges the exit status). */
export function helperArgv(plan: LaunchPlan | null, command: readonly string[], dispatcherPid: number): string[] {
  return helperLaunch(plan, command, dispatcherPid).argv;
}

/** Node's message for a spawn of `file` that failed with the errno `report` holds (null: none). */
function spawnFailure(file: string, report: string): string | null {
  if (!/^\d+$/.test(report)) return null;
  const errno = Number(report);
  const name = Object.entries(osConstants.errno).find(([, value]) => value === errno)?.[0];
  return spawnErrorText(file, name ?? `errno ${errno}`);
}

/** Prints perl's architecture name (`x86_64-linux-gnu-thread-multi`); Config loads only here. */
const PERL_ARCHNAME = 'require Config; print $Config::Config{archname}';

/** The system call numbers the chain's perl programs use, for one architecture. */
export interface ArchSyscalls {
  prctl: number;
  /** unshare(2) and mount(2): the launcher makes the namespace itself (`NAMESPACE_LAUNCHER_SCRIPT`). */
  unshare: number;
  mount: number;
}

/**
 * The numbers by architecture (perl's archname's first part; `ELF_ARCH` names the same
 * architectures by the ELF header's machine and class). From the kernel's tables: x86_64's
 * syscall_64.tbl, the generic include/uapi/asm-generic/unistd.h (scripts/syscall.tbl: aarch64,
 * riscv64, loongarch64), i386's syscall_32.tbl, arm's, s390's and powerpc's (big- and
 * little-endian alike).
 */
const SYSCALLS: Readonly<Record<string, ArchSyscalls>> = {
  x86_64: { prctl: 157, unshare: 272, mount: 165 },
  aarch64: { prctl: 167, unshare: 97, mount: 40 },
  riscv64: { prctl: 167, unshare: 97, mount: 40 },
  loongarch64: { prctl: 167, unshare: 97, mount: 40 },
  i686: { prctl: 172, unshare: 310, mount: 21 },
  i386: { prctl: 172, unshare: 310, mount: 21 },
  arm: { prctl: 172, unshare: 337, mount: 21 },
  s390x: { prctl: 172, unshare: 303, mount: 21 },
  powerpc64: { prctl: 171, unshare: 282, mount: 21 },
  powerpc64le: { prctl: 171, unshare: 282, mount: 21 },
  ppc64: { prctl: 171, unshare: 282, mount: 21 },
};

/** The prctl number for a perl `archname`, 0 for an architecture not in the table. */
export function prctlSyscallFor(archname: string): number {
  const arch = /^([^-\s]+)/.exec(archname.trim())?.[1];
  return arch !== undefined && Object.hasOwn(SYSCALLS, arch) ? SYSCALLS[arch]!.prctl : 0;
}

/**
 * The architecture of an ELF executable by its e_machine and class (`machine/bits`): only the
 * native ABIs, whose syscall numbers are SYSCALLS' (x32, aarch64's ILP32, riscv32 and
 * 31-bit s390 are not here: their numbers differ or are not in the table).
 */
const ELF_ARCH: Readonly<Record<string, string>> = {
  '62/64': 'x86_64', // EM_X86_64
  '183/64': 'aarch64', // EM_AARCH64
  '243/64': 'riscv64', // EM_RISCV
  '258/64': 'loongarch64', // EM_LOONGARCH
  '3/32': 'i386', // EM_386
  '40/32': 'arm', // EM_ARM
  '22/64': 's390x', // EM_S390
  '21/64': 'ppc64', // EM_PPC64
};

/** How many bytes of an ELF header `syscallsForElf` reads (e_ident, e_type, e_machine). */
export const ELF_HEADER_BYTES = 20;

/**
 * The system call numbers for the program whose file starts with `header`: an ELF executable of
 * a machine in ELF_ARCH (e_ident's class at byte 4, its byte order at 5, e_machine at 18-19),
 * else null (a script, such as a perl shim, or anything else: then the chain keeps setpriv).
 */
export function syscallsForElf(header: Uint8Array): ArchSyscalls | null {
  if (header.length < ELF_HEADER_BYTES || header[0] !== 0x7f || header[1] !== 0x45 || header[2] !== 0x4c || header[3] !== 0x46) return null;
  const bits = header[4] === 1 ? 32 : header[4] === 2 ? 64 : 0;
  const machine = header[5] === 1 ? header[18]! | (header[19]! << 8) : header[5] === 2 ? (header[18]! << 8) | header[19]! : -1;
  const arch = ELF_ARCH[`${machine}/${bits}`];
  return arch === undefined ? null : SYSCALLS[arch]!;
}

/** prctl's number for the program whose file starts with `header` (`syscallsForElf`), else 0. */
export function prctlSyscallForElf(header: Uint8Array): number {
  return syscallsForElf(header)?.prctl ?? 0;
}

/**
 * The system call numbers for the perl the chain execs, from its ELF header: no process is
 * started, so the first chain (the isolation probe) can already arm its own parent-death signal,
 * make its namespace and drop its capabilities in the init. Null for a perl found by name only
 * (the exec searches PATH), one that cannot be read, or one `syscallsForElf` does not know.
 */
export function perlSyscallsFromElf(tools: LaunchTools): ArchSyscalls | null {
  if (!isAbsolute(tools.perl)) return null;
  // kit's bounded reader: a FIFO or device named perl is refused at once, never waited on.
  const head = readHead(tools.perl, { maxBytes: ELF_HEADER_BYTES });
  return head.ok ? syscallsForElf(head.bytes) : null;
}

/** prctl's number for the perl the chain execs (`perlSyscallsFromElf`), 0 where not known. */
export function perlPrctlFromElf(tools: LaunchTools): number {
  return perlSyscallsFromElf(tools)?.prctl ?? 0;
}

/** unshare(2)'s and mount(2)'s numbers of an architecture's, null where not known. */
function namespaceOf(numbers: ArchSyscalls | null): NamespaceSyscalls | null {
  return numbers === null ? null : { unshare: numbers.unshare, mount: numbers.mount };
}

/** unshare(2)'s and mount(2)'s numbers for the perl the chain execs (`perlSyscallsFromElf`), null where not known. */
export function perlNamespaceFromElf(tools: LaunchTools): NamespaceSyscalls | null {
  return namespaceOf(perlSyscallsFromElf(tools));
}

/**
 * The numbers a plan is made with: those the caller gave (a test gives a wrong one), the rest
 * from one read of the perl's ELF header.
 */
function planNumbers(tools: LaunchTools, elfPrctl?: number, elfNamespace?: NamespaceSyscalls | null): { prctl: number; namespace: NamespaceSyscalls | null } {
  const read = elfPrctl === undefined || elfNamespace === undefined ? perlSyscallsFromElf(tools) : null;
  return { prctl: elfPrctl ?? read?.prctl ?? 0, namespace: elfNamespace === undefined ? namespaceOf(read) : elfNamespace };
}

/** An unshare spelling or DROP_CAPABILITIES as exec'd: its program (the first word) located. */
function located(words: readonly string[], program: string): string[] {
  return [program, ...words.slice(1)];
}

/**
 * Perl that takes the exclusive, non-blocking lock on `$lockdir` for the worker tree (the
 * keeper's launcher, or the namespace's init), reporting `lock-error`, `busy` or `locked` on
 * `$status`. Uses `cloexec` (CLOEXEC_SUB, in each script) and no module.
 */
const TAKE_DIRECTORY_LOCK = `my ($dir, $lock);
unless (opendir($dir, $lockdir) && open($lock, '<&=', fileno($dir))) { print $status "lock-error $!\\n"; exit 122; }
unless (flock($lock, 2 | 4)) { print $status "busy\\n"; exit 123; }
# Every process of the worker tree inherits the lock: it is free again only when all are gone.
cloexec($lock, 0);
print $status "locked\\n";
`;

/** Perl: `cloexec($fh, $on)` sets or clears a handle's close-on-exec flag (F_GETFD 1, F_SETFD 2, FD_CLOEXEC 1 on every Linux). */
const CLOEXEC_SUB = `sub cloexec { my ($fh, $on) = @_; my $f = fcntl($fh, 1, 0); fcntl($fh, 2, $on ? ($f | 1) : ($f & ~1)); }
`;

/**
 * How both launchers start (LAUNCHER_SCRIPT, NAMESPACE_LAUNCHER_SCRIPT): the launcher's argv up
 * to the wrapper's words (`@wrap`), the parent-death signal armed and read back, the status pipe
 * opened, the dispatcher checked to be its parent still.
 */
const LAUNCHER_START = `
# No pragma or module is loaded (each is a file perl reads and compiles at every start, about a
# millisecond of CPU or more; even naming %! loads Errno): these numbers are the same on every
# Linux architecture (F_GETFD 1, F_SETFD 2, FD_CLOEXEC 1; LOCK_EX 2, LOCK_NB 4; EINTR 4;
# PR_SET_PDEATHSIG 1, PR_GET_PDEATHSIG 2, PR_SET_CHILD_SUBREAPER 36), and opendir opens the directory as O_DIRECTORY
# does (anything else is refused at once, a FIFO is never waited on).
my ($dispatcher, $lockdir, $prctl, $pdeath, $n) = splice(@ARGV, 0, 5);
# Without a setpriv that arms it, the parent-death signal is armed here, first: PR_SET_PDEATHSIG
# (the number added to 0, or perl would pass the string's address). It survives the exec of
# unshare (not setuid) as setpriv's does, and is cleared in every child we fork.
syscall($prctl, 1, $pdeath + 0, 0, 0, 0) if $pdeath > 0 && $prctl > 0;
open(my $status, '>&=', 3) or exit 120;
{ my $old = select($status); $| = 1; select($old); }
${CLOEXEC_SUB}if ($pdeath > 0 && $prctl > 0) {
  # Read back (PR_GET_PDEATHSIG, into an int): the record says the chain is bound only if the
  # kernel says so; a wrong number or a filter that refused the call leaves 0, and nothing starts.
  my $got = pack('i', 0);
  syscall($prctl, 2, $got, 0, 0, 0);
  my $armed = unpack('i', $got);
  if ($armed != $pdeath) { print $status "refused parent-death signal reads back as $armed, not $pdeath\\n"; exit 125; }
}
my @wrap = splice(@ARGV, 0, $n);
# The parent-death signal is armed by now; a dispatcher that died earlier (before setpriv or
# the prctl above armed it) is no longer our parent, and then nothing may start.
exit 121 if getppid() != $dispatcher;
`;

/**
 * The launcher. argv: dispatcher pid, directory to lock (empty with a wrapper), prctl's system
 * call number (0: not known), the parent-death signal's number to arm with it (0: none, or
 * setpriv armed it), N, N words of wrapper (unshare ... perl -e INIT), then the worker command
 * (none with a wrapper: the init reads it). Status lines on fd 3: `refused <why>` (the
 * parent-death signal it armed does not read back: exit 125), `busy`, `lock-error <why>`,
 * `locked`, `exec-failed <why>`.
 *
 * With a wrapper it execs it (the namespace does the rest, the lock included). Without one it stays as the
 * worker's keeper: a child subreaper (orphans of the tree become its children) that starts agy
 * in a process group of its own, relays SIGTERM/SIGINT/SIGHUP to it, kills the whole tree on
 * SIGUSR2 (the dispatcher's "kill now"; the worker could always kill itself anyway), when agy exits (what it left behind, setsid'd or not),
 * and when the dispatcher dies (its parent-death signal, SIGTERM, arrives with a changed
 * parent). It reports `started <agy pid>`, then `exit N` or `signal N`.
 */
export const LAUNCHER_SCRIPT = `${LAUNCHER_START}if (@wrap) {
  # The namespace's init takes the directory lock once it knows the directory (INIT).
  # unshare (the namespace's parent) must not die of a SIGHUP meant for agy; INIT restores it.
  $SIG{HUP} = 'IGNORE';
  cloexec($status, 0);
  exec { $wrap[0] } @wrap, @ARGV;
  print $status "exec-failed $!\\n";
  exit 127;
}
${TAKE_DIRECTORY_LOCK}
# POSIX is not loaded (setpgrp is setpgid, and WNOHANG is 1 on every Linux architecture), nor
# Config: prctl's number, which differs by architecture, comes from the dispatcher, which asked
# this perl's Config once (loading Config here cost about 5 ms of CPU at every keeper start).
my $WNOHANG = 1;

# Once the dispatcher is gone its end of the status pipe is too: a write must then fail, not
# kill the keeper with SIGPIPE before it has cleaned up.
$SIG{PIPE} = 'IGNORE';
syscall($prctl, 36, 1, 0, 0, 0) if $prctl > 0;  # PR_SET_CHILD_SUBREAPER
my ($agy, $killall, $st) = (0, 0, undef);
my %pending;
# Perl runs these between operations (also inside a waiting waitpid), so the work is done here.
sub relay { my $sig = shift; if (getppid() != $dispatcher) { kill_tree(); return; } if ($agy > 0) { kill($sig, -$agy); } else { $pending{$sig} = 1; } }
$SIG{TERM} = sub { relay('TERM') }; $SIG{INT} = sub { relay('INT') }; $SIG{HUP} = sub { relay('HUP') };
$SIG{USR2} = sub { $killall = 1; kill_tree() if $agy > 0; };
$SIG{USR1} = 'IGNORE';
sub reap { while ((my $w = waitpid(-1, $WNOHANG)) > 0) { $st = $? if $w == $agy && !defined $st; } }
sub descendants {
  my %kids;
  opendir(my $d, '/proc') or return ();
  for my $p (grep { /^\\d+$/ } readdir($d)) {
    open(my $fh, '<', "/proc/$p/stat") or next;
    my $s = <$fh>; close($fh);
    push @{$kids{$1}}, $p if defined $s && $s =~ /.*\\) \\S (\\d+)/s;
  }
  my (@out, @todo) = ();
  @todo = ($$);
  while (@todo) { my $p = shift @todo; for my $c (@{$kids{$p} || []}) { push @out, $c; push @todo, $c; } }
  return @out;
}
# Stopped first so none forks between the scan and the kill; orphans come back to us as
# children (subreaper), so the next round finds them.
sub kill_tree { for (1 .. 50) { my @d = descendants(); last unless @d; kill('STOP', @d); kill('KILL', @d); reap(); } }
pipe(my $er, my $ew) or do { print $status "exec-failed pipe: $!\\n"; exit 127; };
$agy = fork();
unless (defined $agy) { print $status "exec-failed fork: $!\\n"; exit 127; }
if ($agy == 0) {
  setpgrp(0, 0);
  $SIG{$_} = 'DEFAULT' for qw(TERM INT HUP USR1 USR2 PIPE);
  close($er);
  cloexec($status, 1);
  exec { $ARGV[0] } @ARGV;
  print $ew "$!"; close($ew);
  exit 127;
}
setpgrp($agy, $agy);
close($ew);
my $err = do { local $/; <$er> };
close($er);
if (defined $err && length $err) { waitpid($agy, 0); print $status "exec-failed $err\\n"; exit 127; }
kill($_, -$agy) for keys %pending;
kill_tree() if $killall || getppid() != $dispatcher;
print $status "started $agy\\n";
while (!defined $st) {
  my $w = waitpid(-1, 0);
  if ($w == $agy) { $st = $?; last; }
  # EINTR is 4 on every Linux architecture: naming it as $!{EINTR} would make perl load Errno
  # (with Exporter and strict) while compiling, about 3 ms of CPU at every launcher start.
  last if $w < 0 && $! != 4;
}
$st = 9 unless defined $st;
if ($st & 127) { print $status "signal ", ($st & 127), "\\n"; } else { print $status "exit ", ($st >> 8), "\\n"; }
kill_tree();
exit 0;
`;

/**
 * What the init does (INIT_SCRIPT, and the namespace launcher's child, NAMESPACE_LAUNCHER_SCRIPT),
 * given `$prctl` (prctl's number, 0: setpriv dropped the capabilities), `$status` (fd 3),
 * `$lockdir` (set from the header) and `cloexec`: drop the capabilities and check /proc/self/status, say `ready`, read the worker's
 * directory and command, take the lock, start agy and report its exit.
 */
const INIT_BODY = `# unshare (or the namespace launcher) has mounted our /proc: from here on no capability may reach the worker, or with
# CAP_SYS_ADMIN it could unmount that /proc and see the host's processes. Every capability leaves
# the bounding set (EINVAL past the last one the kernel knows; EPERM without CAP_SETPCAP, as for
# a user's uid in its own user namespace, which holds none: see below), the ambient set is
# cleared, and no_new_privs keeps setuid programs and file capabilities from giving any back.
# The inheritable set is not written (capset's number differs by architecture): a user
# namespace starts with it empty, and anything else is refused below.
if ($prctl > 0) {
  for my $cap (0 .. 63) { syscall($prctl, 24, $cap, 0, 0, 0); }
  syscall($prctl, 47, 4, 0, 0, 0);
  syscall($prctl, 38, 1, 0, 0, 0);
}
# What the kernel says now (after setpriv's drop too): an exec gives a process what its ambient
# set holds, what its inheritable set shares with the file's, and what its bounding set allows
# of the file's capabilities (all of them for uid 0). So the ambient and inheritable sets must
# be empty, and the bounding set too, unless no uid is 0 and the init holds nothing (CapPrm 0):
# then no_new_privs cuts whatever a file grants to that nothing (setpriv leaves a user so too).
my %cap;
if (open(my $fh, '<', '/proc/self/status')) { while (my $line = <$fh>) { $cap{$1} = $2 if $line =~ /^(\\w+):\\s*(.*?)\\s*$/; } close($fh); }
my $empty = sub { my $v = $cap{$_[0]}; defined $v && $v =~ /^0+$/ };
my $root = grep { $_ eq '0' } split(/\\s+/, defined $cap{Uid} ? $cap{Uid} : '0');
my @kept = grep { !$empty->($_) } ('CapInh', 'CapAmb');
push @kept, 'CapBnd' unless $empty->('CapBnd') || (!$root && $empty->('CapPrm'));
push @kept, 'NoNewPrivs' unless defined $cap{NoNewPrivs} && $cap{NoNewPrivs} eq '1';
if (@kept) { print $status "refused capabilities kept: ", join(', ', map { "$_ " . (defined $cap{$_} ? $cap{$_} : 'unknown') } @kept), "\\n"; exit 126; }
$SIG{HUP} = 'DEFAULT';
$SIG{PIPE} = 'IGNORE';
# The namespace is made and no capability is left: the chain can run a worker (the isolation
# probe's answer). The worker's directory and command follow on stdin: a byte count, a newline,
# then the directory and each word, NUL-separated. Read unbuffered and exactly, so what follows
# on stdin (the prompt) is agy's. End of input first: the dispatch ended before its launch.
print $status "ready\\n";
my ($len, $c) = ('', '');
while (1) { exit 0 unless sysread(STDIN, $c, 1); last if $c eq "\\n"; $len .= $c; exit 124 if length($len) > 12; }
exit 124 unless $len =~ /^\\d+$/;
my $head = '';
while (length($head) < $len) { exit 0 unless sysread(STDIN, $head, $len - length($head), length($head)); }
my @cmd = split(/\\0/, $head, -1);
$lockdir = shift(@cmd);
exit 124 unless @cmd;
${TAKE_DIRECTORY_LOCK}unless (chdir($lockdir)) { print $status "exec-failed chdir $lockdir: $!\\n"; exit 127; }
pipe(my $er, my $ew) or do { print $status "exec-failed pipe: $!\\n"; exit 127; };
my $pid = fork();
unless (defined $pid) { print $status "exec-failed fork: $!\\n"; exit 127; }
if ($pid == 0) {
  $SIG{PIPE} = 'DEFAULT';
  close($er);
  cloexec($status, 1);
  exec { $cmd[0] } @cmd;
  print $ew "$!"; close($ew);
  exit 127;
}
close($ew);
my $err = do { local $/; <$er> };
close($er);
if (defined $err && length $err) { waitpid($pid, 0); print $status "exec-failed $err\\n"; exit 127; }
print $status "started\\n";
my $st = 0;
while (1) { my $w = waitpid(-1, 0); if ($w == $pid) { $st = $?; last; } last if $w < 0; }
if ($st & 127) { print $status "signal ", ($st & 127), "\\n"; } else { print $status "exit ", ($st >> 8), "\\n"; }
exit 0;
`;

/**
 * PID 1 of the worker's namespace. It ignores signals it has no handler for (the kernel's rule
 * for an init), so agy runs as its child, where signals act as usual. argv: prctl's number when
 * it drops the capabilities itself (0: setpriv dropped them). Status lines on fd 3: `refused
 * <why>` (a capability could survive the worker's exec: exit 126), `ready` (then it waits for
 * `initHeader` on stdin), `busy`, `lock-error <why>`, `locked`, `started`, `exec-failed <why>`,
 * then `exit N` or `signal N`.
 *
 * Dropping them itself, the init keeps its own permitted set (root's, as root without a user
 * namespace; none for a user's uid exec'd by unshare; all of its user namespace's where the
 * launcher made that namespace and forked it, which lets it empty the bounding set too): only
 * its exec would empty it, and capset's number differs by architecture. It runs nothing but this script after the drop, and every exec from it, agy's
 * first, starts with none. The kernel also refuses a process holding fewer capabilities access
 * to its /proc entries (the ptrace rule), so agy cannot read the init's environ or open its fds
 * (under setpriv's drop, with nothing held on either side, it can).
 */
export const INIT_SCRIPT = `
# No pragma or module (see the launcher): F_GETFD 1, F_SETFD 2 and FD_CLOEXEC 1 on every Linux;
# LOCK_EX 2, LOCK_NB 4; PR_CAPBSET_DROP 24, PR_SET_NO_NEW_PRIVS 38, PR_CAP_AMBIENT 47 with
# PR_CAP_AMBIENT_CLEAR_ALL 4.
my ($prctl, $lockdir) = ((shift(@ARGV) || 0) + 0, '');
open(my $status, '>&=', 3) or exit 120;
{ my $old = select($status); $| = 1; select($old); }
${CLOEXEC_SUB}${INIT_BODY}`;

/**
 * The usual isolated chain as one perl process (a plan's `byLauncher`): the launcher's start
 * (LAUNCHER_START), then what `unshare --pid --fork --mount-proc --kill-child` does (with
 * `--user --map-current-user` for a user), by system call, then the init (INIT_BODY) in the
 * forked child, without an exec. argv: the launcher's (no directory, N 0), then unshare(2)'s and
 * mount(2)'s numbers and 1 for a user namespace (else 0). Each step is checked; a failed one is
 * `refused namespace: <step>: <error>` on fd 3 and exit 119, before `ready`, with nothing
 * started (for the first chain that is the probe's no: the plan falls back to the unshare
 * program's chain). The parent then stays as unshare's did: it ignores SIGINT, SIGTERM and
 * SIGHUP (signals for agy reach the whole group), waits for the init and ends as it did (its
 * exit code, or killed by its signal). Its child is PID 1 of the new namespace, under the
 * parent-death signal SIGKILL (read back; `--kill-child`), with a /proc of its own.
 */
export const NAMESPACE_LAUNCHER_SCRIPT = `${LAUNCHER_START}
# CLONE_NEWNS 0x20000, CLONE_NEWUSER 0x10000000, CLONE_NEWPID 0x20000000; MS_NOSUID 2, MS_NODEV 4,
# MS_NOEXEC 8, MS_REC 0x4000, MS_PRIVATE 0x40000; O_WRONLY 1; SIGKILL 9: the same on every Linux.
my ($unshare, $mount, $user) = map { $_ + 0 } splice(@ARGV, 0, 3);
sub refuse { print $status "refused namespace: $_[0]\\n"; exit 119; }
# The ids to map, read first: in a user namespace without its maps they read as the overflow id.
my ($uid, $gid) = ($> + 0, (split(/ /, $)))[0] + 0);
syscall($unshare, 0x20000 | 0x20000000 | ($user ? 0x10000000 : 0)) == 0 or refuse("unshare: $!");
if ($user) {
  # --map-current-user: the uid and gid stay ours inside (a user's gid_map needs setgroups denied).
  for my $map (['uid_map', "$uid $uid 1"], ['setgroups', 'deny'], ['gid_map', "$gid $gid 1"]) {
    my ($file, $line) = @$map;
    my $fh;
    (sysopen($fh, "/proc/self/$file", 1) && (syswrite($fh, $line) || 0) == length($line) && close($fh)) or refuse("/proc/self/$file: $!");
  }
}
# The init's parent is outside its namespace, where getppid() reads 0: it sees the parent gone
# by this pipe instead, whose other end only the parent holds.
pipe(my $alive, my $parent) or refuse("pipe: $!");
$SIG{$_} = 'IGNORE' for qw(INT TERM HUP);
my $init = fork();
defined $init or refuse("fork: $!");
if ($init > 0) {
  close($alive);
  waitpid($init, 0);
  my $st = $?;
  exit($st >> 8) unless $st & 127;
  # Killed by a signal: so is the parent, as unshare ends.
  $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP);
  kill($st & 127, $$);
  exit 1;
}
close($parent);
# --kill-child: the kernel kills the init when the parent dies (read back), and a parent that
# died before that has closed its end of the pipe.
syscall($prctl, 1, 9, 0, 0, 0);
my $killed = pack('i', 0);
syscall($prctl, 2, $killed, 0, 0, 0);
unpack('i', $killed) == 9 or refuse("parent-death signal reads back as " . unpack('i', $killed) . ", not 9");
my $gone = '';
vec($gone, fileno($alive), 1) = 1;
my $readable = select($gone, undef, undef, 0);
$readable >= 0 or refuse("select: $!");
exit 121 if $readable > 0;
close($alive);
# --mount-proc: no mount of ours propagates to the host's, then a /proc of this namespace (the
# strings in variables: syscall wants buffers it may write to, not constants).
my ($none, $slash, $proc, $procdir) = ('none', '/', 'proc', '/proc');
syscall($mount, $none, $slash, 0, 0x4000 | 0x40000, 0) == 0 or refuse("mount / private: $!");
syscall($mount, $proc, $procdir, $proc, 2 | 4 | 8, 0) == 0 or refuse("mount /proc: $!");
(readlink('/proc/self') || '') eq '1' or refuse('/proc/self is not PID 1 of the namespace');
$SIG{$_} = 'DEFAULT' for qw(INT TERM);
${INIT_BODY}`;

/**
 * What the init reads on stdin before it starts agy: the byte count, a newline, then the
 * directory (locked, and agy's working directory) and the command's words, NUL-separated.
 */
export function initHeader(lockDir: string, command: readonly string[]): Buffer {
  const body = Buffer.from([lockDir, ...command].join('\0'), 'utf8');
  return Buffer.concat([Buffer.from(`${body.length}\n`, 'ascii'), body]);
}

const PID_NAMESPACE_FLAGS = ['--pid', '--fork', '--mount-proc', '--kill-child'];

/**
 * Runs inside the namespace, after unshare mounted its /proc and before the init: no
 * capability survives the next exec (an empty bounding and inheritable set leave even uid 0
 * with none) and no setuid program can give one back. The uid, files and network are unchanged.
 */
export const DROP_CAPABILITIES = ['setpriv', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--'];

/** The unshare spellings to try, in order: as root no user namespace is needed. */
export function unshareCandidates(isRoot: boolean): string[][] {
  const asUser = [
    ['unshare', '--user', '--map-current-user', ...PID_NAMESPACE_FLAGS],
    // util-linux before 2.38 has no --map-current-user; the worker then sees itself as uid 0
    // inside the namespace while every file it writes is still owned by the user.
    ['unshare', '--user', '--map-root-user', ...PID_NAMESPACE_FLAGS],
  ];
  return isRoot ? [['unshare', ...PID_NAMESPACE_FLAGS], ...asUser] : asUser;
}

export interface ProbeResult {
  ok: boolean;
  why: string;
  /** What the command printed (the perl probe prints its architecture). */
  stdout: string;
}
export type ProbeRun = (argv: readonly string[]) => ProbeResult;
export type AsyncProbeRun = (argv: readonly string[]) => Promise<ProbeResult>;
/**
 * Answers the first probe (does the isolated chain run here?) by starting the worker's own
 * chain with `plan`, parked at its init's `ready`, instead of a chain that only runs
 * `perl -e 'exit 0'`: ok once the init is ready (the caller keeps that chain for its worker).
 */
export type ChainProbe = (plan: LaunchPlan) => Promise<ProbeResult>;

/** How long a probe (or a parked chain's `ready`) may take. */
export const PROBE_TIMEOUT_MS = 5000;

function probeOutcome(
  error: Error | undefined,
  status: number | null,
  signal: string | null,
  output: { stdout: string; stderr: string },
  argv0: string,
): ProbeResult {
  const { stdout, stderr } = output;
  if (error) return { ok: false, why: `${argv0}: ${(error as NodeJS.ErrnoException).code ?? error.message}`, stdout };
  if (status === 0) return { ok: true, why: '', stdout };
  const text = stderr.trim().split('\n').pop() ?? '';
  return { ok: false, why: text !== '' ? text : `${argv0} exited with ${status ?? signal}`, stdout };
}

/** Runs a probe command with a short bound; ok when it exits 0. */
export const runProbe: ProbeRun = (argv) => {
  const result = spawnSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' });
  return probeOutcome(result.error, result.status, result.signal, { stdout: result.stdout ?? '', stderr: result.stderr ?? '' }, argv[0]!);
};

/** `runProbe` without blocking the event loop (a process hosting many units), in `env`. */
export function asyncProbe(env: NodeJS.ProcessEnv): AsyncProbeRun {
  return (argv) =>
    new Promise((resolve) => {
      execFile(argv[0]!, argv.slice(1), { env, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' }, (error, stdout, stderr) => {
        const spawnError = error && typeof (error as NodeJS.ErrnoException).code === 'string' ? error : undefined;
        const status = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : null) : 0;
        const signal = error ? ((error as { signal?: string | null }).signal ?? null) : null;
        resolve(probeOutcome(spawnError, status, signal, { stdout, stderr }, argv[0]!));
      });
    });
}

/**
 * The isolated chain of `plan` as a probe command of its own (`planLaunch`, or a caller with no
 * ChainProbe): its status lines go to /dev/null and its stdin is empty, so its init says
 * `ready` and ends with status 0 at the end of input; a refusal, or a chain that could not be
 * made, ends it with another. sh execs the chain: the launcher's parent is the prober.
 */
function standaloneChain(plan: LaunchPlan): string[] {
  return ['/bin/sh', '-c', 'exec 3>/dev/null </dev/null && exec "$@"', 'sh', ...isolatedChainArgv(plan, process.pid)];
}

/**
 * One probe: the command to run; `chain`, when set, is the plan whose isolated chain that
 * command stands for (a ChainProbe may answer it by starting that chain itself).
 */
interface ProbeStep {
  argv: readonly string[];
  chain?: LaunchPlan;
}

/**
 * The decision, as a sequence of probes: each `yield` is a command to try, answered with its
 * result; the return value is the plan. The usual case costs one probe process chain
 * (setpriv, unshare, perl together), which a dispatch answers with its worker's own chain
 * (ChainProbe); only a failure asks the parts one by one.
 */
function* planSteps(
  setting: IsolationSetting,
  platform: NodeJS.Platform,
  isRoot: boolean,
  tools: LaunchTools,
  elfPrctl: number,
  elfNamespace: NamespaceSyscalls | null,
): Generator<ProbeStep, LaunchPlan, ProbeResult> {
  const perl = [tools.perl, '-e', 'exit 0'];
  const drop = located(DROP_CAPABILITIES, tools.setpriv);
  const candidates = unshareCandidates(isRoot);
  if (platform === 'linux' && setting !== 'off') {
    const first = candidates[0]!;
    // One perl process makes the namespace itself where the ELF header also gave unshare(2)'s
    // and mount(2)'s numbers, and where the unshare program that stands in for it is on PATH
    // (its chain is the fallback): a step it sees fail refuses (the chain ends before `ready`),
    // and the unshare program's chain below is tried.
    if (elfPrctl > 0 && elfNamespace !== null && isAbsolute(tools.unshare)) {
      const own: LaunchPlan = { isolation: { kind: 'pid', unshare: first, initDrops: true, byLauncher: elfNamespace }, parentDeath: false, launcher: true, tools, prctlSyscall: elfPrctl };
      if ((yield { argv: standaloneChain(own), chain: own }).ok) return own;
    }
    if (elfPrctl > 0) {
      // No setpriv: the launcher arms its own parent-death signal and reads it back, the init
      // drops the capabilities and reads /proc/self/status; either refuses (the chain ends
      // before `ready`) when the kernel did not do what was asked, and then setpriv's chain
      // below is tried as before.
      const armed: LaunchPlan = { isolation: { kind: 'pid', unshare: first, initDrops: true }, parentDeath: false, launcher: true, tools, prctlSyscall: elfPrctl };
      if ((yield { argv: standaloneChain(armed), chain: armed }).ok) return armed;
    }
    const isolated: LaunchPlan = { isolation: { kind: 'pid', unshare: first }, parentDeath: true, launcher: true, tools };
    if ((yield { argv: diesWithParent([...located(first, tools.unshare), '--', ...drop, ...perl], 'KILL', tools), chain: isolated }).ok) {
      return isolated;
    }
  }
  // Whether perl runs at all, and (for a keeper) prctl's number for this perl's architecture.
  const perlProbe = platform === 'linux' ? yield { argv: [tools.perl, '-e', PERL_ARCHNAME] } : null;
  const launcher = perlProbe?.ok === true;
  // Config's answer, or the ELF header's where Config's architecture is not in the table.
  const prctlSyscall = launcher ? prctlSyscallFor(perlProbe.stdout) || elfPrctl : 0;
  const parentDeath = launcher && (yield { argv: diesWithParent(perl, 'TERM', tools) }).ok;
  const base = { parentDeath, launcher, tools, prctlSyscall };
  if (setting === 'off') return { isolation: { kind: 'none', reason: 'PRUN_ISOLATE=off' }, ...base };
  if (platform !== 'linux') return { isolation: { kind: 'none', reason: `PID namespaces need Linux (this is ${platform})` }, ...base };
  if (!launcher) return { isolation: { kind: 'none', reason: 'perl is not on PATH (it runs the namespace init)' }, ...base };
  const failures: string[] = [];
  for (const unshare of candidates) {
    const probe = yield { argv: [...located(unshare, tools.unshare), '--', ...drop, ...perl] };
    if (probe.ok) return { isolation: { kind: 'pid', unshare }, ...base };
    failures.push(probe.why);
  }
  const reason = `no PID namespace: ${[...new Set(failures)].join('; ')}`;
  return { isolation: { kind: 'none', reason }, ...base };
}

/** Decide the launch plan for `setting` on this machine (probes run synchronously). */
export function planLaunch(
  setting: IsolationSetting,
  platform: NodeJS.Platform,
  isRoot: boolean,
  run: ProbeRun = runProbe,
  tools: LaunchTools = BARE_TOOLS,
  elfPrctl?: number,
  elfNamespace?: NamespaceSyscalls | null,
): LaunchPlan {
  const numbers = planNumbers(tools, elfPrctl, elfNamespace);
  const steps = planSteps(setting, platform, isRoot, tools, numbers.prctl, numbers.namespace);
  let step = steps.next();
  while (!step.done) step = steps.next(run(step.value.argv));
  return step.value;
}

/**
 * `planLaunch` with probes that do not block the event loop; with `chainProbe`, the isolated
 * chain's probe is answered by it (the dispatch's own worker chain) instead of a probe chain.
 */
export async function planLaunchAsync(
  setting: IsolationSetting,
  platform: NodeJS.Platform,
  isRoot: boolean,
  run: AsyncProbeRun,
  tools: LaunchTools = BARE_TOOLS,
  chainProbe?: ChainProbe,
  elfPrctl?: number,
  elfNamespace?: NamespaceSyscalls | null,
): Promise<LaunchPlan> {
  const numbers = planNumbers(tools, elfPrctl, elfNamespace);
  const steps = planSteps(setting, platform, isRoot, tools, numbers.prctl, numbers.namespace);
  let step = steps.next();
  while (!step.done) {
    const { argv, chain } = step.value;
    step = steps.next(await (chain !== undefined && chainProbe !== undefined ? chainProbe(chain) : run(argv)));
  }
  return step.value;
}

/**
 * What this machine gives does not change while a process runs: one probe per setting and
 * PATH (where setpriv, unshare and perl are found), however many units the process runs. A
 * probe that found no namespace is not kept (a failed fork under load must not leave every
 * later unit of a long-lived host unisolated): the next unit probes again. The unit whose
 * plan is probed may answer the isolated chain's probe with its own chain (`chainProbe`); a
 * unit that finds the plan made has no probe to answer.
 */
const plans = new Map<string, Promise<LaunchPlan>>();

export function cachedLaunchPlan(
  setting: IsolationSetting,
  platform: NodeJS.Platform,
  isRoot: boolean,
  env: NodeJS.ProcessEnv,
  chainProbe?: ChainProbe,
): Promise<LaunchPlan> {
  const key = `${setting}\0${isRoot}\0${env['PATH'] ?? ''}`;
  let plan = plans.get(key);
  if (plan === undefined) {
    plan = planLaunchAsync(setting, platform, isRoot, asyncProbe(env), resolveLaunchTools(env), chainProbe);
    plans.set(key, plan);
    void plan.then((decided) => {
      if (setting !== 'off' && decided.isolation.kind !== 'pid') plans.delete(key);
    });
  }
  return plan;
}

/**
 * What made the namespace, for the record: the unshare program's command line, or, where the
 * launcher made it itself, `perl unshare(2)` and the options whose work it did.
 */
function mechanism(isolation: { unshare: string[]; byLauncher?: NamespaceSyscalls }): string {
  return isolation.byLauncher === undefined ? isolation.unshare.join(' ') : `perl unshare(2) ${isolation.unshare.slice(1).join(' ')}`;
}

/** The state file `isolation`: what the worker was started with, and why not isolated. */
export function isolationRecord(plan: LaunchPlan): string {
  const lines =
    plan.isolation.kind === 'pid'
      ? ['isolation: pid', `mechanism: ${mechanism(plan.isolation)}`, 'capabilities: none']
      : ['isolation: none', `reason: ${plan.isolation.reason}`];
  const death = parentDeathOf(plan);
  lines.push(`parent-death: ${death === null ? 'none' : death.by === 'setpriv' ? `setpriv --pdeathsig ${death.signal}` : `prctl PR_SET_PDEATHSIG ${death.signal}`}`);
  lines.push(`directory-lock: ${plan.launcher ? 'flock' : 'none'}`);
  return `${lines.join('\n')}\n`;
}

export interface LaunchInput {
  dispatcherPid: number;
  /** The directory whose lock the worker tree holds (its working directory). */
  lockDir: string;
  /** The worker command: agy and its arguments. */
  command: readonly string[];
}

/** Whether `plan` starts the worker through a namespace init, which takes its directory and command on stdin (`initHeader`). */
export function parksAtInit(plan: LaunchPlan): boolean {
  return plan.launcher && plan.isolation.kind === 'pid';
}

/**
 * The launcher's command line with its arguments up to the wrapper's length: prctl's number and
 * the parent-death signal it arms itself (0 when setpriv does, or nothing can).
 */
function launcherArgv(plan: LaunchPlan, tools: LaunchTools, dispatcherPid: number, lockDir: string, script = LAUNCHER_SCRIPT): string[] {
  const death = parentDeathOf(plan);
  const pdeath = death?.by === 'prctl' ? osConstants.signals[`SIG${death.signal}`] : 0;
  return [tools.perl, '-e', script, '--', String(dispatcherPid), lockDir, String(plan.prctlSyscall ?? 0), String(pdeath)];
}

/** `launcher` under setpriv's parent-death signal when the plan has it (else the launcher arms its own, or none). */
function boundToDispatcher(plan: LaunchPlan, launcher: string[], tools: LaunchTools): string[] {
  const death = parentDeathOf(plan);
  return death?.by === 'setpriv' ? diesWithParent(launcher, death.signal, tools) : launcher;
}

/**
 * The isolated chain up to its init, without the worker: the init says `ready` and then reads
 * the worker's directory and command on stdin (`initHeader`).
 */
export function isolatedChainArgv(plan: LaunchPlan, dispatcherPid: number): string[] {
  if (!parksAtInit(plan) || plan.isolation.kind !== 'pid') throw new Error('isolatedChainArgv: the plan has no isolated chain');
  const tools = plan.tools ?? BARE_TOOLS;
  const own = plan.isolation.byLauncher;
  if (own !== undefined) {
    // One perl process: the launcher makes the namespace and its child is the init (no wrapper: N is 0).
    const user = plan.isolation.unshare.includes('--user') ? '1' : '0';
    const launcher = [...launcherArgv(plan, tools, dispatcherPid, '', NAMESPACE_LAUNCHER_SCRIPT), '0', String(own.unshare), String(own.mount), user];
    return boundToDispatcher(plan, launcher, tools);
  }
  // The init's argument: prctl's number when it drops the capabilities itself (0: setpriv did).
  const drops = plan.isolation.initDrops === true;
  const dropLink = drops ? [] : located(DROP_CAPABILITIES, tools.setpriv);
  const wrap = [...located(plan.isolation.unshare, tools.unshare), '--', ...dropLink, tools.perl, '-e', INIT_SCRIPT, '--', String(drops ? (plan.prctlSyscall ?? 0) : 0)];
  // In a namespace SIGKILL to unshare ends everything (--kill-child, then the init's death).
  return boundToDispatcher(plan, [...launcherArgv(plan, tools, dispatcherPid, ''), String(wrap.length), ...wrap], tools);
}

/**
 * The command line that starts the worker under `plan`: an isolated chain (`isolatedChainArgv`,
 * the command then goes to its init on stdin), the keeper's chain, or the command alone.
 */
export function launchArgv(plan: LaunchPlan, input: LaunchInput): string[] {
  if (!plan.launcher) return [...input.command];
  if (parksAtInit(plan)) return isolatedChainArgv(plan, input.dispatcherPid);
  const tools = plan.tools ?? BARE_TOOLS;
  // The keeper (no namespace) must clean up when the dispatcher dies, so it gets a signal it
  // can handle (TERM, parentDeathOf).
  return boundToDispatcher(plan, [...launcherArgv(plan, tools, input.dispatcherPid, input.lockDir), '0', ...input.command], tools);
}
