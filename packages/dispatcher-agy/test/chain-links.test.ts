/**
 * The isolated chain without its setpriv links (README, "Isolation and no orphans"): where the
 * ELF header of the perl the chain execs names a machine whose prctl number is known, the
 * launcher arms its own parent-death signal and reads it back, and the namespace's init drops
 * the capabilities and checks /proc/self/status before it says `ready`. Either refuses when the
 * kernel did not do what was asked, and the plan then falls back to setpriv's chain. Verified
 * against the real kernel: what the worker holds, a wrong prctl number, an init left with a
 * capability, and a whole dispatch with a setpriv on PATH that counts its starts.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import {
  ELF_HEADER_BYTES,
  INIT_SCRIPT,
  initHeader,
  isolatedChainArgv,
  isolationRecord,
  perlPrctlFromElf,
  planLaunch,
  prctlSyscallForElf,
  resolveLaunchTools,
  unshareCandidates,
  type LaunchPlan,
  type ProbeResult,
} from '../src/isolation.js';
import { WorkerProcess } from '../src/worker.js';
import { skip } from './chain-count.js';
import { agyWithStep, readState, rootPool } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const tools = resolveLaunchTools({ PATH });
const isRoot = process.getuid?.() === 0;
/** prctl's number from this perl's ELF header (0: not Linux, no perl, or not known). */
const elf = process.platform === 'linux' ? perlPrctlFromElf(tools) : 0;
const noArmedChain = skip ?? (elf === 0 ? "skipped: this perl's ELF header gives no prctl number" : null);
const armedTitle = (text: string): string => (noArmedChain === null ? text : `${text} (${noArmedChain})`);
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
  function steps(elfPrctl: number, answer: (argv: readonly string[]) => boolean): { asked: string[][]; plan: LaunchPlan } {
    const asked: string[][] = [];
    const plan = planLaunch('auto', 'linux', true, (argv) => {
      asked.push([...argv]);
      return { ok: answer(argv), why: 'no', stdout: 'x86_64-linux-gnu-thread-multi' } satisfies ProbeResult;
    }, located, elfPrctl);
    return { asked, plan };
  }

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
  test.skipIf(noArmedChain !== null)(armedTitle('starts no setpriv at all, preflight included, and its worker holds no capability'), async () => {
    const root = pool.root();
    // A setpriv that records each start, then runs the real one.
    const bin = join(root.dir, 'counting-setpriv');
    const log = join(root.dir, 'setpriv-starts');
    mkdirSync(bin);
    writeFileSync(join(bin, 'setpriv'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${tools.setpriv}' "$@"\n`, { mode: 0o755 });
    const dump = join(root.dir, 'worker-status');
    const agy = agyWithStep(join(root.dir, 'agy-status'), `cat /proc/self/status > "${dump}"`);
    const run = await root.run({ env: { PRUN_ISOLATE: 'pid', PATH: `${bin}:${PATH}`, ANTIGRAVITY_BIN: agy, ANTIGRAVITY_PREFLIGHT: 'auto' } });
    expect(run.code).toBe(0);
    expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    expect(capabilities(readFileSync(dump, 'utf8'))).toMatchObject({ CapInh: NONE, CapPrm: NONE, CapEff: NONE, CapAmb: NONE, NoNewPrivs: '1', ...(isRoot ? { CapBnd: NONE } : {}) });
    expect(readState(run.stateDir, 'isolation')).toMatch(/^isolation: pid\nmechanism: unshare [^\n]+\ncapabilities: none\nparent-death: prctl PR_SET_PDEATHSIG KILL\ndirectory-lock: flock\n$/);
  });
});
