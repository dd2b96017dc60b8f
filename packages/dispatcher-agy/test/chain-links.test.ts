/**
 * The isolated chain without its setpriv links (README, "Isolation and no orphans"): where the
 * ELF header of the perl the chain execs names a machine whose prctl number is known, the
 * launcher arms its own parent-death signal and reads it back, and the namespace's init drops
 * the capabilities and checks /proc/self/status before it says `ready`. Either refuses when the
 * kernel did not do what was asked, and the plan then falls back to setpriv's chain. Verified
 * against the real kernel: what the worker holds, a wrong prctl number, an init left with a
 * capability, and a whole dispatch with a setpriv on PATH that counts its starts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, test } from 'vitest';
import {
  ELF_HEADER_BYTES,
  INIT_SCRIPT,
  NAMESPACE_LAUNCHER_SCRIPT,
  initHeader,
  isolatedChainArgv,
  isolationRecord,
  perlNamespaceFromElf,
  perlPrctlFromElf,
  planLaunch,
  prctlSyscallForElf,
  resolveLaunchTools,
  syscallsForElf,
  unshareCandidates,
  type LaunchPlan,
  type NamespaceSyscalls,
  type ProbeResult,
} from '../src/isolation.js';
import { WorkerProcess } from '../src/worker.js';
import { countingPath, skip } from './chain-count.js';
import { agyWithStep, processRunning, readState, rootPool, waitFor } from './harness.js';
import { PSELECT6, noRefusal, refusing, refusingUnshare } from './refuse-syscall.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const tools = resolveLaunchTools({ PATH });
const isRoot = process.getuid?.() === 0;
/** prctl's number from this perl's ELF header (0: not Linux, no perl, or not known). */
const elf = process.platform === 'linux' ? perlPrctlFromElf(tools) : 0;
const noArmedChain = skip ?? (elf === 0 ? "skipped: this perl's ELF header gives no prctl number" : null);
const armedTitle = (text: string): string => (noArmedChain === null ? text : `${text} (${noArmedChain})`);
/** unshare(2)'s and mount(2)'s numbers from this perl's ELF header (null: not known): the one-perl chain. */
const ns = process.platform === 'linux' ? perlNamespaceFromElf(tools) : null;
const noOwnChain = noArmedChain ?? (ns === null ? "skipped: this perl's ELF header gives no unshare(2) number" : null);
const ownTitle = (text: string): string => (noOwnChain === null ? text : `${text} (${noOwnChain})`);
/** No system call has this number on any architecture: ENOSYS, as a seccomp filter could answer. */
const NO_SUCH_SYSCALL = 100_000;

/** An ELF header: class (1: 32-bit, 2: 64-bit), byte order (1: little, 2: big), e_machine. */
function elfHeader(bits: 1 | 2, order: 1 | 2, machine: number): Buffer {
  const header = Buffer.alloc(ELF_HEADER_BYTES + 44);
  header.write('\x7fELF', 0, 'latin1');
  header[4] = bits;
  header[5] = order;
  header[6] = 1;
  if (order === 1) header.writeUInt16LE(machine, 18);
  else header.writeUInt16BE(machine, 18);
  return header;
}

describe('prctl by the ELF header', () => {
  test('maps each known machine and class to its prctl number, in either byte order where the machine has both', () => {
    expect(prctlSyscallForElf(elfHeader(2, 1, 62))).toBe(157); // x86_64
    expect(prctlSyscallForElf(elfHeader(2, 1, 183))).toBe(167); // aarch64
    expect(prctlSyscallForElf(elfHeader(2, 2, 183))).toBe(167); // aarch64_be
    expect(prctlSyscallForElf(elfHeader(2, 1, 243))).toBe(167); // riscv64
    expect(prctlSyscallForElf(elfHeader(2, 1, 258))).toBe(167); // loongarch64
    expect(prctlSyscallForElf(elfHeader(1, 1, 3))).toBe(172); // i386
    expect(prctlSyscallForElf(elfHeader(1, 1, 40))).toBe(172); // arm
    expect(prctlSyscallForElf(elfHeader(2, 2, 22))).toBe(172); // s390x
    expect(prctlSyscallForElf(elfHeader(2, 2, 21))).toBe(171); // ppc64
    expect(prctlSyscallForElf(elfHeader(2, 1, 21))).toBe(171); // ppc64le
  });

  test("gives each known machine's unshare(2) and mount(2) numbers too (the kernel's tables)", () => {
    expect(syscallsForElf(elfHeader(2, 1, 62))).toEqual({ prctl: 157, unshare: 272, mount: 165 }); // x86_64
    for (const [bits, order, machine] of [[2, 1, 183], [2, 2, 183], [2, 1, 243], [2, 1, 258]] as const) {
      expect(syscallsForElf(elfHeader(bits, order, machine))).toEqual({ prctl: 167, unshare: 97, mount: 40 }); // the generic table
    }
    expect(syscallsForElf(elfHeader(1, 1, 3))).toEqual({ prctl: 172, unshare: 310, mount: 21 }); // i386
    expect(syscallsForElf(elfHeader(1, 1, 40))).toEqual({ prctl: 172, unshare: 337, mount: 21 }); // arm
    expect(syscallsForElf(elfHeader(2, 2, 22))).toEqual({ prctl: 172, unshare: 303, mount: 21 }); // s390x
    expect(syscallsForElf(elfHeader(2, 2, 21))).toEqual({ prctl: 171, unshare: 282, mount: 21 }); // ppc64
    expect(syscallsForElf(elfHeader(2, 1, 21))).toEqual({ prctl: 171, unshare: 282, mount: 21 }); // ppc64le
    expect(syscallsForElf(elfHeader(1, 1, 62))).toBeNull(); // x32
    expect(syscallsForElf(elfHeader(2, 1, 8))).toBeNull(); // MIPS
    expect(syscallsForElf(Buffer.from('#!/bin/sh\n'))).toBeNull();
  });

  test('gives 0 for another ABI of a known machine, an unknown machine, a byte-swapped e_machine, and anything not ELF', () => {
    expect(prctlSyscallForElf(elfHeader(1, 1, 62))).toBe(0); // x32: its numbers carry __X32_SYSCALL_BIT
    expect(prctlSyscallForElf(elfHeader(1, 1, 183))).toBe(0); // aarch64 ILP32
    expect(prctlSyscallForElf(elfHeader(1, 1, 243))).toBe(0); // riscv32
    expect(prctlSyscallForElf(elfHeader(1, 2, 22))).toBe(0); // 31-bit s390
    expect(prctlSyscallForElf(elfHeader(2, 1, 8))).toBe(0); // MIPS
    const swapped = elfHeader(2, 1, 62);
    swapped[5] = 2;
    expect(prctlSyscallForElf(swapped)).toBe(0); // 62 written little-endian, read big-endian: 15872
    const badClass = elfHeader(2, 1, 62);
    badClass[4] = 3;
    expect(prctlSyscallForElf(badClass)).toBe(0);
    const badOrder = elfHeader(2, 1, 62);
    badOrder[5] = 0;
    expect(prctlSyscallForElf(badOrder)).toBe(0);
    expect(prctlSyscallForElf(Buffer.from('#!/bin/sh\nexec /usr/bin/perl "$@"\n'))).toBe(0);
    expect(prctlSyscallForElf(elfHeader(2, 1, 62).subarray(0, ELF_HEADER_BYTES - 1))).toBe(0);
    expect(prctlSyscallForElf(Buffer.alloc(0))).toBe(0);
  });

  test.skipIf(process.platform !== 'linux')("reads the perl the chain execs: this one's, and 0 for a script, a FIFO, a missing file or a bare name", () => {
    const dir = pool.root().dir;
    const expected = { x64: 157, arm64: 167, riscv64: 167, loong64: 167, ia32: 172, arm: 172, s390x: 172, ppc64: 171 }[process.arch as string];
    if (expected !== undefined && tools.perl.startsWith('/')) expect(perlPrctlFromElf(tools)).toBe(expected);
    const shim = join(dir, 'perl-shim');
    writeFileSync(shim, `#!/bin/sh\nexec "${tools.perl}" "$@"\n`, { mode: 0o755 });
    expect(perlPrctlFromElf({ ...tools, perl: shim })).toBe(0);
    const fifo = join(dir, 'perl-fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // Refused at once (kit's bounded reader), never waited on.
    expect(perlPrctlFromElf({ ...tools, perl: fifo })).toBe(0);
    expect(perlPrctlFromElf({ ...tools, perl: join(dir, 'missing') })).toBe(0);
    expect(perlPrctlFromElf({ ...tools, perl: 'perl' })).toBe(0);
  });
});

describe('the plan', () => {
  const located = { setpriv: '/opt/u/setpriv', unshare: '/opt/u/unshare', perl: '/opt/p/perl' };
  /** The steps `planLaunch` asks, answered by `answer` (by each step's first words). */
  function steps(elfPrctl: number, answer: (argv: readonly string[]) => boolean, elfNamespace: NamespaceSyscalls | null = null, isRoot = true): { asked: string[][]; plan: LaunchPlan } {
    const asked: string[][] = [];
    const plan = planLaunch('auto', 'linux', isRoot, (argv) => {
      asked.push([...argv]);
      return { ok: answer(argv), why: 'no', stdout: 'x86_64-linux-gnu-thread-multi' } satisfies ProbeResult;
    }, located, elfPrctl, elfNamespace);
    return { asked, plan };
  }
  const x86 = { unshare: 272, mount: 165 };
  const PID_FLAGS = ['--pid', '--fork', '--mount-proc', '--kill-child'];

  test("with unshare(2)'s and mount(2)'s numbers too, the first chain is one perl: the launcher makes the namespace itself", () => {
    const { asked, plan } = steps(157, () => true, x86);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.slice(4, 7)).toEqual(['/opt/p/perl', '-e', NAMESPACE_LAUNCHER_SCRIPT]);
    expect(asked[0]).not.toContain('/opt/u/unshare');
    expect(plan).toEqual({ isolation: { kind: 'pid', unshare: ['unshare', ...PID_FLAGS], initDrops: true, byLauncher: x86 }, parentDeath: false, launcher: true, tools: located, prctlSyscall: 157 });
    expect(isolatedChainArgv(plan, 4242)).toEqual(['/opt/p/perl', '-e', NAMESPACE_LAUNCHER_SCRIPT, '--', '4242', '', '157', '9', '0', '272', '165', '0']);
    expect(isolationRecord(plan)).toBe(
      'isolation: pid\nmechanism: perl unshare(2) --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n',
    );
    // A user's: a user namespace mapping the uid and gid to themselves (--map-current-user).
    const user = steps(157, () => true, x86, false).plan;
    expect(user.isolation).toEqual({ kind: 'pid', unshare: ['unshare', '--user', '--map-current-user', ...PID_FLAGS], initDrops: true, byLauncher: x86 });
    expect(isolatedChainArgv(user, 4242).slice(-3)).toEqual(['272', '165', '1']);
  });

  test("a refused one-perl chain falls back to the unshare program's (then setpriv's); no unshare on PATH: no one-perl chain", () => {
    const refused = steps(157, (argv) => argv[6] !== NAMESPACE_LAUNCHER_SCRIPT, x86);
    expect(refused.asked).toHaveLength(2);
    expect(refused.asked[1]!.slice(4, 7)).toEqual(['/opt/p/perl', '-e', expect.any(String)]);
    expect(refused.asked[1]).toContain('/opt/u/unshare');
    expect(refused.plan).toEqual({ isolation: { kind: 'pid', unshare: ['unshare', ...PID_FLAGS], initDrops: true }, parentDeath: false, launcher: true, tools: located, prctlSyscall: 157 });
    const both = steps(157, (argv) => argv[0] === '/opt/u/setpriv', x86);
    expect(both.asked).toHaveLength(3);
    expect(both.plan).toEqual({ isolation: { kind: 'pid', unshare: ['unshare', ...PID_FLAGS] }, parentDeath: true, launcher: true, tools: located });
    const bare = planLaunch('auto', 'linux', true, () => ({ ok: true, why: '', stdout: '' }), { ...located, unshare: 'unshare' }, 157, x86);
    expect(bare.isolation).toEqual({ kind: 'pid', unshare: ['unshare', ...PID_FLAGS], initDrops: true });
  });

  test("with the ELF header's number, the first chain has no setpriv: the launcher arms KILL, the init drops the capabilities", () => {
    const { asked, plan } = steps(157, () => true);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.slice(0, 5)).toEqual(['/bin/sh', '-c', 'exec 3>/dev/null </dev/null && exec "$@"', 'sh', '/opt/p/perl']);
    expect(asked[0]).not.toContain('/opt/u/setpriv');
    expect(plan).toEqual({ isolation: { kind: 'pid', unshare: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'], initDrops: true }, parentDeath: false, launcher: true, tools: located, prctlSyscall: 157 });
    const argv = isolatedChainArgv(plan, 4242);
    expect(argv).not.toContain('/opt/u/setpriv');
    // The launcher's prctl number and signal (SIGKILL); the init's argument is the number too.
    expect(argv.slice(3, 8)).toEqual(['--', '4242', '', '157', String(osConstants.signals.SIGKILL)]);
    expect(argv.slice(-2)).toEqual(['--', '157']);
    // Every line an existing value: the record changes only where the truth did (prctl, not setpriv).
    expect(isolationRecord(plan)).toBe(
      'isolation: pid\nmechanism: unshare --pid --fork --mount-proc --kill-child\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n',
    );
  });

  test("a refused first chain falls back to setpriv's chain; without a number from the ELF header that chain is the first", () => {
    const fallback = steps(157, (argv) => argv[0] === '/opt/u/setpriv');
    expect(fallback.asked).toHaveLength(2);
    expect(fallback.asked[1]!.slice(0, 4)).toEqual(['/opt/u/setpriv', '--pdeathsig', 'KILL', '--']);
    expect(fallback.plan).toEqual({ isolation: { kind: 'pid', unshare: ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'] }, parentDeath: true, launcher: true, tools: located });
    const unknown = steps(0, () => true);
    expect(unknown.asked).toHaveLength(1);
    expect(unknown.asked[0]!.slice(0, 4)).toEqual(['/opt/u/setpriv', '--pdeathsig', 'KILL', '--']);
    expect(unknown.plan).toEqual(fallback.plan);
  });
});

/** Runs `plan`'s isolated chain to its end with `command` as the worker, in `dir`. */
function runChain(plan: LaunchPlan, dir: string, command: readonly string[], prefix: readonly string[] = []): { status: number | null; stdout: string; status3: string } {
  const argv = [...prefix, ...isolatedChainArgv(plan, process.pid)];
  const run = spawnSync(argv[0]!, argv.slice(1), { cwd: dir, input: initHeader(dir, command), stdio: ['pipe', 'pipe', 'pipe', 'pipe'], encoding: 'utf8', timeout: 20_000 });
  return { status: run.status, stdout: run.stdout, status3: String(run.output[3] ?? '') };
}

/** The capability lines of a /proc/<pid>/status text. */
function capabilities(status: string): Record<string, string> {
  return Object.fromEntries([...status.matchAll(/^(Cap\w+|NoNewPrivs|Uid):\s*(.*)$/gm)].map((match) => [match[1]!, match[2]!.trim()]));
}

const NONE = '0000000000000000';
const DUMP = ['/bin/sh', '-c', 'cat /proc/self/status'];

describe('the chain, against the kernel', () => {
  const armed = (unshare: string[], prctl = elf): LaunchPlan => ({ isolation: { kind: 'pid', unshare, initDrops: true }, parentDeath: false, launcher: true, tools, prctlSyscall: prctl });

  test.skipIf(noArmedChain !== null)(armedTitle('leaves the worker no capability and no_new_privs set'), () => {
    const run = runChain(armed(unshareCandidates(isRoot)[0]!), pool.root().dir, DUMP);
    expect(run.status3).toBe('ready\nlocked\nstarted\nexit 0\n');
    expect(capabilities(run.stdout)).toMatchObject({ CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapBnd: NONE, CapAmb: NONE, NoNewPrivs: '1' });
  });

  // As root the suite's own chain has no user namespace; a user's chain has one: run it as
  // nobody, with each unshare spelling (--map-root-user makes the worker uid 0 inside).
  test.skipIf(noArmedChain !== null || !isRoot)(armedTitle("as a user, in a user namespace, either mapping: the worker has nothing, uid 0 inside not even a bounding set"), () => {
    const dir = pool.root().dir;
    chmodSync(dir, 0o777);
    const nobody = [tools.setpriv, '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
    const [current, root] = unshareCandidates(false) as [string[], string[]];
    const asCurrent = runChain(armed(current), dir, DUMP, nobody);
    if (asCurrent.status3 === '') return; // no unprivileged user namespaces here
    expect(asCurrent.status3).toBe('ready\nlocked\nstarted\nexit 0\n');
    // What setpriv's chain leaves a user too: no permitted set, so no exec gains anything.
    expect(capabilities(asCurrent.stdout)).toMatchObject({ Uid: '65534\t65534\t65534\t65534', CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapAmb: NONE, NoNewPrivs: '1' });
    const asRoot = runChain(armed(root), dir, DUMP, nobody);
    expect(asRoot.status3).toBe('ready\nlocked\nstarted\nexit 0\n');
    expect(capabilities(asRoot.stdout)).toMatchObject({ Uid: '0\t0\t0\t0', CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapBnd: NONE, CapAmb: NONE, NoNewPrivs: '1' });
  });

  test.skipIf(noArmedChain !== null)(armedTitle('refuses to start anything when the parent-death signal does not read back (a wrong prctl number)'), () => {
    const dir = pool.root().dir;
    const marker = join(dir, 'started');
    const run = runChain(armed(unshareCandidates(isRoot)[0]!, NO_SUCH_SYSCALL), dir, ['/bin/sh', '-c', `echo > "${marker}"`]);
    expect(run.status).toBe(125);
    expect(run.status3).toBe(`refused parent-death signal reads back as 0, not ${osConstants.signals.SIGKILL}\n`);
    expect(existsSync(marker)).toBe(false);
  });

  test.skipIf(noArmedChain !== null)(armedTitle("so the plan, with such a number, falls back to setpriv's chain"), () => {
    const plan = planLaunch('auto', process.platform, isRoot, undefined, tools, NO_SUCH_SYSCALL);
    expect(plan.isolation).toEqual({ kind: 'pid', unshare: unshareCandidates(isRoot)[0] });
    expect(isolationRecord(plan)).toMatch(/\nparent-death: setpriv --pdeathsig KILL\n/);
    expect(planLaunch('auto', process.platform, isRoot, undefined, tools).isolation).toMatchObject({ initDrops: true });
  });

  test.skipIf(noArmedChain !== null)(armedTitle('a parked chain that refuses is the probe\'s no, with the reason'), async () => {
    const parked = WorkerProcess.park({ plan: armed(unshareCandidates(isRoot)[0]!, NO_SUCH_SYSCALL), env: { PATH }, cwd: pool.root().dir, dispatcherPid: process.pid }, osConstants.signals);
    const ready = await parked.readyInTime();
    parked.abandon();
    expect(ready).toEqual({ ok: false, why: `parent-death signal reads back as 0, not ${osConstants.signals.SIGKILL}`, stdout: '' });
  });

  // The one-perl chain (a plan's byLauncher): the launcher makes the namespace itself.
  const own = (unshare: string[], numbers: NamespaceSyscalls = ns!): LaunchPlan => ({ isolation: { kind: 'pid', unshare, initDrops: true, byLauncher: numbers }, parentDeath: false, launcher: true, tools, prctlSyscall: elf });
  /** The worker's view: its pid and parent, every pid its /proc lists (shell builtins only: no child of its own), its status. */
  const VIEW = ['/bin/sh', '-c', 'echo "pid $$ ppid $PPID"; for p in /proc/[0-9]*; do printf "%s " "${p#/proc/}"; done; echo; cat /proc/self/status'];
  const nobody = [tools.setpriv, '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
  const userNamespaces = isRoot && isAbsolute(tools.unshare) && spawnSync(nobody[0]!, [...nobody.slice(1), tools.unshare, ...unshareCandidates(false)[0]!.slice(1), 'true']).status === 0;

  test.skipIf(noOwnChain !== null)(ownTitle('in one perl process: the worker is PID 2 under the init, with a /proc of its own and no capability'), () => {
    const run = runChain(own(unshareCandidates(isRoot)[0]!), pool.root().dir, VIEW);
    expect([run.status, run.status3]).toEqual([0, 'ready\nlocked\nstarted\nexit 0\n']);
    expect(run.stdout.split('\n').slice(0, 2)).toEqual(['pid 2 ppid 1', '1 2 ']);
    expect(capabilities(run.stdout)).toMatchObject({ CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapBnd: NONE, CapAmb: NONE, NoNewPrivs: '1' });
  });

  test.skipIf(noOwnChain !== null || !userNamespaces)(ownTitle("as a user, in a user namespace that maps the uid and gid to themselves: the same, the user's uid kept"), () => {
    const dir = pool.root().dir;
    chmodSync(dir, 0o777);
    const run = runChain(own(unshareCandidates(false)[0]!), dir, [...VIEW.slice(0, 2), `${VIEW[2]}; id -u; id -g`], nobody);
    expect([run.status, run.status3]).toEqual([0, 'ready\nlocked\nstarted\nexit 0\n']);
    expect(run.stdout.split('\n').slice(0, 2)).toEqual(['pid 2 ppid 1', '1 2 ']);
    expect(run.stdout.trimEnd().split('\n').slice(-2)).toEqual(['65534', '65534']);
    // The init held every capability of its user namespace, so it could empty the bounding set too.
    expect(capabilities(run.stdout)).toMatchObject({ Uid: '65534\t65534\t65534\t65534', CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapBnd: NONE, CapAmb: NONE, NoNewPrivs: '1' });
  });

  test.skipIf(noOwnChain !== null)(ownTitle('refuses, before ready and with nothing started, when the kernel refuses a step: unshare(2), mount(2), a user without a user namespace, a seccomp filter'), () => {
    const dir = pool.root().dir;
    chmodSync(dir, 0o777);
    const marker = join(dir, 'started');
    const touch = ['/bin/sh', '-c', `echo > "${marker}"`];
    const first = unshareCandidates(isRoot)[0]!;
    const outcome = (run: { status: number | null; status3: string }): [number | null, string] => [run.status, run.status3];
    // No such system call (ENOSYS): a wrong number, as a filter could answer too.
    expect(outcome(runChain(own(first, { ...ns!, unshare: NO_SUCH_SYSCALL }), dir, touch))).toEqual([119, 'refused namespace: unshare: Function not implemented\n']);
    expect(outcome(runChain(own(first, { ...ns!, mount: NO_SUCH_SYSCALL }), dir, touch))).toEqual([119, 'refused namespace: mount / private: Function not implemented\n']);
    // root's spelling (no user namespace) run by a user: the kernel's EPERM.
    if (isRoot) expect(outcome(runChain(own(unshareCandidates(true)[0]!), dir, touch, nobody))).toEqual([119, 'refused namespace: unshare: Operation not permitted\n']);
    if (noRefusal === null) expect(outcome(runChain(own(first), dir, touch, refusingUnshare!))).toEqual([119, 'refused namespace: unshare: Operation not permitted\n']);
    expect(existsSync(marker)).toBe(false);
  });

  test.skipIf(noOwnChain !== null)(ownTitle("so the plan, with such a number, falls back to the unshare program's chain; with this perl's own it is the one-perl chain"), () => {
    const first = unshareCandidates(isRoot)[0]!;
    const fallback = planLaunch('auto', process.platform, isRoot, undefined, tools, elf, { ...ns!, mount: NO_SUCH_SYSCALL });
    expect(fallback.isolation).toEqual({ kind: 'pid', unshare: first, initDrops: true });
    expect(isolationRecord(fallback)).toMatch(/^isolation: pid\nmechanism: unshare --[^\n]+\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\n/);
    expect(planLaunch('auto', process.platform, isRoot, undefined, tools).isolation).toEqual({ kind: 'pid', unshare: first, initDrops: true, byLauncher: ns });
  });

  test.skipIf(noOwnChain !== null)(ownTitle("a parked one-perl chain that refuses is the probe's no, with the reason"), async () => {
    const parked = WorkerProcess.park({ plan: own(unshareCandidates(isRoot)[0]!, { ...ns!, unshare: NO_SUCH_SYSCALL }), env: { PATH }, cwd: pool.root().dir, dispatcherPid: process.pid }, osConstants.signals);
    const ready = await parked.readyInTime();
    parked.abandon();
    expect(ready).toEqual({ ok: false, why: 'namespace: unshare: Function not implemented', stdout: '' });
  });

  test.skipIf(noOwnChain !== null)(ownTitle('dies whole with its launcher (--kill-child): a SIGKILL of the launcher alone ends the init and the worker'), async () => {
    const dir = pool.root().dir;
    const argv = isolatedChainArgv(own(unshareCandidates(isRoot)[0]!), process.pid);
    const chain = spawn(argv[0]!, argv.slice(1), { cwd: dir, stdio: ['pipe', 'ignore', 'ignore', 'pipe'], detached: true });
    chain.stdin!.write(initHeader(dir, ['/bin/sleep', '60']));
    const status = chain.stdio[3] as Readable;
    let lines = '';
    status.setEncoding('utf8');
    status.on('data', (text: string) => (lines += text));
    const exited = new Promise<string | null>((resolve) => chain.once('exit', (_code, signal) => resolve(signal)));
    await waitFor(() => lines.includes('started\n'), 10_000, 'the worker started');
    const childrenOf = (pid: number): number[] => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter((word) => word !== '').map(Number);
    const [init] = childrenOf(chain.pid!);
    const [worker] = childrenOf(init!);
    expect(readFileSync(`/proc/${worker}/cmdline`, 'utf8')).toBe('/bin/sleep\u000060\u0000');
    process.kill(chain.pid!, 'SIGKILL');
    expect(await exited).toBe('SIGKILL');
    await waitFor(() => !processRunning(init!) && !processRunning(worker!), 5_000, `init ${init} and worker ${worker} gone`);
  });

  // The init's own check, whoever dropped the capabilities: outside a namespace, given no
  // number (setpriv's chain), it holds what this test holds, and no_new_privs is not set.
  test.skipIf(process.platform !== 'linux' || !tools.perl.startsWith('/'))('the init refuses, before ready, while a capability could reach the worker', () => {
    const dir = pool.root().dir;
    const marker = join(dir, 'started');
    const run = spawnSync(tools.perl, ['-e', INIT_SCRIPT, '--', '0'], { cwd: dir, input: initHeader(dir, ['/bin/sh', '-c', `echo > "${marker}"`]), stdio: ['pipe', 'pipe', 'pipe', 'pipe'], encoding: 'utf8' });
    expect(run.status).toBe(126);
    const line = String(run.output[3]);
    expect(line).toMatch(/^refused capabilities kept: [^\n]*NoNewPrivs 0\n$/);
    if (isRoot) expect(line).toMatch(/CapBnd [0-9a-f]*[1-9a-f][0-9a-f]*/);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('a dispatch', () => {
  const noSelectRefusal = noOwnChain ?? noRefusal ?? (PSELECT6 === undefined ? `skipped: pselect6's number is not known for ${process.arch}` : null);
  test.skipIf(noSelectRefusal !== null)(
    `whose one-perl chain is refused a step falls back to the unshare program's chain, isolated as before${noSelectRefusal === null ? '' : ` (${noSelectRefusal})`}`,
    async () => {
      const root = pool.root();
      const counting = countingPath(root);
      // The kernel refuses pselect6, which only the one-perl chain's init makes (it checks its parent
      // is alive): that chain says `refused namespace: select: ...`, the probe's no.
      const run = await root.run({ env: { PRUN_ISOLATE: 'pid', PATH: counting.path }, wrap: refusing(PSELECT6!)! });
      expect(run.code).toBe(0);
      expect(root.workerCalls()).toHaveLength(1);
      expect(counting.perlStarts().map((start) => start.kind)).toEqual(['namespace-launcher', 'launcher', 'init']);
      expect(counting.unshareStarts()).toHaveLength(1);
      const [refused, worker] = counting.starts();
      expect(Number(readState(run.stateDir, 'worker-pid-unverified'))).toBe(worker);
      expect(worker).not.toBe(refused);
      expect(readState(run.stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: unshare --[^\n]+\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n$/);
    },
  );

  test.skipIf(noArmedChain !== null)(armedTitle('starts no setpriv at all, preflight included, and its worker holds no capability'), async () => {
    const root = pool.root();
    // A setpriv that records each start, then runs the real one.
    const bin = join(root.dir, 'counting-setpriv');
    const log = join(root.dir, 'setpriv-starts');
    mkdirSync(bin);
    writeFileSync(join(bin, 'setpriv'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${tools.setpriv}' "$@"\n`, { mode: 0o755 });
    const dump = join(root.dir, 'worker-status');
    const agy = agyWithStep(join(root.dir, 'agy-status'), `cat /proc/self/status > "${dump}"`);
    // And a perl and an unshare that count theirs (chain-count.ts).
    const counting = countingPath(root);
    const run = await root.run({ env: { PRUN_ISOLATE: 'pid', PATH: `${bin}:${counting.path}`, ANTIGRAVITY_BIN: agy, ANTIGRAVITY_PREFLIGHT: 'auto' } });
    expect(run.code).toBe(0);
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    // perl ran once for the chain (the launcher that is the init's parent) and once per preflight helper; no unshare.
    expect(counting.unshareStarts()).toHaveLength(ns === null ? 1 : 0);
    expect(counting.perlStarts().map((start) => start.kind).sort()).toEqual(ns === null ? ['helper', 'helper', 'init', 'launcher'] : ['helper', 'helper', 'namespace-launcher']);
    expect(capabilities(readFileSync(dump, 'utf8'))).toMatchObject({ CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapAmb: NONE, NoNewPrivs: '1', ...(isRoot ? { CapBnd: NONE } : {}) });
    expect(readState(run.stateDir, 'isolation')).toMatch(
      new RegExp(`^isolation: pid\nmechanism: ${ns === null ? 'unshare' : 'perl unshare\\(2\\)'} [^\n]+\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n$`),
    );
  });
});
