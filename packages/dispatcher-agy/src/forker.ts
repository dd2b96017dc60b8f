/**
 * The chain forker of a host that runs unit after unit (a batch's supervisor; README, "Running
 * units in-process"): one perl process, started once, that forks each unit's isolated chain
 * instead of the host spawning a new perl for it. A spawn from Node forks the whole host
 * process and then execs perl, which compiles the launcher again; a fork of a small perl that
 * has compiled it once costs a fraction of that (README, "Start-up and speed").
 *
 * What a forked chain is, is exactly what a spawned one is: the forker's child runs the
 * namespace launcher's own code (NAMESPACE_LAUNCHER_SCRIPT, already compiled) with the same
 * arguments, the unit's environment, its directory, a process group of its own and fresh pipes
 * on its fds 0-3. Only its parent differs: the launcher's parent-death signal binds it to the forker,
 * and the forker's binds the forker to the host (armed and checked before it says anything), so
 * a host that dies any way still takes every chain with it. The forker serves only the usual
 * chain (one perl process, its parent-death signal armed by prctl, `forkable`); any other plan's
 * chain is spawned as before.
 *
 * The protocol, all of it between the host and this one process:
 * - on the forker's stdout (read as events): `ready <pid> <request fd> <reply fd>` once, then
 *   `exit <id> <wait status>` as each chain ends (its launcher and init gone, then reaped);
 * - the host opens the request and reply pipes through /proc/<pid>/fd (blocking), says `hello`,
 *   and the forker lets its own copies go: the request pipe's end is then the host's alone;
 * - a fork is a request (length, newline, NUL-separated words: `fork`, id, directory, the count
 *   of environment entries, the entries, the launcher's arguments) and its answer on the reply
 *   pipe, read at once: `chain <pid> <fd> <fd> <fd> <fd>` (the chain's stdin, stdout, stderr and
 *   status pipes, the ends the host keeps, still open in the forker) or `failed <why>`;
 * - the host opens those four through /proc as well and says `opened <id>`; the forker closes
 *   its copies, so each pipe's other end is the chain's alone, as with a spawn.
 * The end of the request pipe (the host closed it, or died) ends the forker once its last chain
 * has ended.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { NAMESPACE_LAUNCHER_SCRIPT, isolatedChainArgv, parentDeathOf, parksAtInit, type LaunchPlan } from './isolation.js';
import { errorText } from './process.js';

/**
 * The forker's loop, before the launcher's code in the same script: `zserve` returns only in a
 * forked child, which then runs the launcher below it with its @ARGV, %ENV and fds set. POSIX is
 * loaded once, for the forker's life (dup2, close, _exit).
 */
const FORKER_SCRIPT = `
use POSIX ();
# Every exit here, the launcher's and the init's included, skips perl's global destruction: a
# chain is a copy of the forker, whose every object a normal exit would visit, in each of its two
# processes (measured: it made a forked chain's perl time twice a spawned one's). Nothing is
# left to flush: every write here is a syswrite or autoflushed.
BEGIN { *CORE::GLOBAL::exit = sub { POSIX::_exit(@_ ? $_[0] : 0) }; }
my ($zhost, $zprctl) = splice(@ARGV, 0, 2);
# PR_SET_PDEATHSIG SIGKILL, read back, then the host checked to be our parent still.
syscall($zprctl + 0, 1, 9, 0, 0, 0);
my $zarmed = pack('i', 0);
syscall($zprctl + 0, 2, $zarmed, 0, 0, 0);
exit 125 unless unpack('i', $zarmed) == 9;
exit 121 if getppid() != $zhost;
# fd 3 is held, so that no pipe of ours is on 0-3, where a child's dup2 would clobber it.
open(my $zhold, '<', '/dev/null') or exit 120;
# A child's alive pipe, held here for the child's life: a handle left in zfork's lexicals would
# be closed (its fd with it) when the child returns from zfork to run the launcher.
my (%zchains, $zbuf, $zalive);
pipe(my $zreq, my $zreqw) && pipe(my $zrepr, my $zrep) or exit 120;
{ my $old = select($zrep); $| = 1; select($old); }
sub zevent { syswrite(STDOUT, join(' ', @_) . "\\n"); }
sub zreply { syswrite($zrep, join(' ', @_) . "\\n"); }
sub zfork {
  my ($id, $cwd, $nenv, @rest) = @_;
  my @env = splice(@rest, 0, $nenv);
  my ($in, $inw, $outr, $out, $errr, $err, $str, $st, $alive, $alivew);
  unless (pipe($in, $inw) && pipe($outr, $out) && pipe($errr, $err) && pipe($str, $st) && pipe($alive, $alivew)) { zreply('failed', "pipe: $!"); return 0; }
  my $pid = fork();
  unless (defined $pid) { zreply('failed', "fork: $!"); close($_) for ($in, $inw, $outr, $out, $errr, $err, $str, $st, $alive, $alivew); return 0; }
  if ($pid == 0) {
    # A process group of its own, as a spawned chain's (set by the parent too, before it answers:
    # the host may signal the group as soon as it has the pid). The forker's session is already
    # not the host's, and has no terminal.
    setpgrp(0, 0);
    POSIX::dup2(fileno($in), 0); POSIX::dup2(fileno($out), 1); POSIX::dup2(fileno($err), 2); POSIX::dup2(fileno($st), 3);
    # The forker's own handles are closed as perl's: perl counts the users of each fd, and an fd
    # closed behind its back would keep a later handle on the same number from closing. fd 3
    # ($zhold's) is the status pipe now and stays; the alive pipe stays (close-on-exec: agy never
    # holds it).
    for my $c (values %zchains) { close($_) for grep { defined } ($c->{alive}, @{$c->{ends} || []}); }
    close($_) for ($in, $inw, $outr, $out, $errr, $err, $str, $st, $alive, $zreq, $zreqw, $zrepr, $zrep);
    # Anything else open here was inherited by the forker, not perl's: closed by number.
    my $keep = fileno($alivew);
    opendir(my $fds, '/proc/self/fd') or POSIX::_exit(120);
    my @open = grep { /^\\d+$/ && $_ > 3 && $_ != $keep } readdir($fds);
    closedir($fds);
    POSIX::close($_) for @open;
    chdir($cwd) or POSIX::_exit(120);
    %ENV = ();
    for my $kv (@env) { my $eq = index($kv, '='); $ENV{substr($kv, 0, $eq)} = substr($kv, $eq + 1); }
    @ARGV = @rest;
    $zalive = $alivew;
    return 1;
  }
  setpgrp($pid, $pid);
  close($_) for ($in, $out, $err, $st, $alivew);
  $zchains{$id} = { pid => $pid, alive => $alive, ends => [$inw, $outr, $errr, $str] };
  zreply('chain', $pid, map { fileno($_) } $inw, $outr, $errr, $str);
  return 0;
}
sub zserve {
  zevent('ready', $$, fileno($zreqw), fileno($zrepr));
  my $open = 1;
  while ($open || %zchains) {
    my $rin = '';
    vec($rin, fileno($zreq), 1) = 1 if $open;
    for my $c (values %zchains) { vec($rin, fileno($c->{alive}), 1) = 1 if $c->{alive}; }
    my $rout;
    if (select($rout = $rin, undef, undef, undef) < 0) { next if ($! + 0) == 4; exit 1; }
    for my $id (keys %zchains) {
      my $c = $zchains{$id};
      next unless $c->{alive} && vec($rout, fileno($c->{alive}), 1);
      # The alive pipe's other end is held by the launcher and its init only: both are gone.
      close($c->{alive});
      delete $c->{alive};
      waitpid($c->{pid}, 0);
      zevent('exit', $id, $?);
      delete $zchains{$id} unless $c->{ends};
    }
    next unless $open && vec($rout, fileno($zreq), 1);
    unless (sysread($zreq, $zbuf, 65536, length($zbuf))) { $open = 0; next; }
    while ($zbuf =~ /^(\\d+)\\n/) {
      my $head = length($1) + 1;
      my $len = $1;
      last if length($zbuf) < $head + $len;
      my @words = split(/\\0/, substr($zbuf, $head, $len), -1);
      substr($zbuf, 0, $head + $len) = '';
      my $verb = shift(@words);
      if ($verb eq 'fork') { return if zfork(@words); }
      elsif ($verb eq 'opened') {
        my $c = $zchains{$words[0]};
        next unless $c && $c->{ends};
        close($_) for @{$c->{ends}};
        delete $c->{ends};
        delete $zchains{$words[0]} unless $c->{alive};
      }
      elsif ($verb eq 'hello') { close($zreqw); close($zrepr); }
    }
  }
  exit 0;
}
zserve();
`;

/** Whether `plan`'s chain can come from a forker: the one-perl chain, bound by prctl. */
export function forkable(plan: LaunchPlan): boolean {
  return parksAtInit(plan) && plan.isolation.kind === 'pid' && plan.isolation.byLauncher !== undefined && parentDeathOf(plan)?.by === 'prctl';
}

/** What a parked chain is started with (worker.ts's ParkSpec, without the dispatcher's pid). */
export interface ForkSpec {
  env: Record<string, string>;
  cwd: string;
}

/** A chain the forker forked, in the shape WorkerProcess reads a spawned one in. */
class ForkedChain extends EventEmitter {
  readonly stdio: [Writable, Readable, Readable, Readable];

  constructor(
    readonly pid: number,
    readonly stdin: Writable,
    readonly stdout: Readable,
    readonly stderr: Readable,
    status: Readable,
  ) {
    super();
    this.stdio = [stdin, stdout, stderr, status];
  }
}

/** A request: its length, a newline, its words NUL-separated. */
function request(words: readonly string[]): Buffer {
  const body = Buffer.from(words.join('\0'), 'utf8');
  return Buffer.concat([Buffer.from(`${body.length}\n`, 'ascii'), body]);
}

export class ChainForker {
  private readonly child: ChildProcess;
  private requestFd = -1;
  private replyFd = -1;
  private state: 'starting' | 'ready' | 'gone' = 'starting';
  private readonly chains = new Map<string, ForkedChain>();
  private nextId = 0;
  private closed = false;
  private readonly whenGone: (() => void)[] = [];

  /** Starts the forker for `plan` (which must be `forkable`), bound to this process. Throws when the spawn fails. */
  constructor(readonly plan: LaunchPlan) {
    // The launcher's own argv, whose script and arguments the forker takes (isolatedChainArgv).
    const [perl] = isolatedChainArgv(plan, process.pid);
    this.child = spawn(perl!, ['-e', `${FORKER_SCRIPT}${NAMESPACE_LAUNCHER_SCRIPT}`, '--', String(process.pid), String(plan.prctlSyscall ?? 0)], {
      stdio: ['ignore', 'pipe', 'ignore'],
      // A session of its own (which its chains share, each in a group of its own): a signal to the host's group reaches none of them.
      detached: true,
    });
    this.child.on('error', () => this.gone());
    // 'close', not 'exit': the forker's last events (its chains' ends) are read by then.
    this.child.on('close', () => this.gone());
    let buffered = '';
    const events = this.child.stdout!;
    events.setEncoding('utf8');
    events.on('data', (text: string) => {
      buffered += text;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        this.event(buffered.slice(0, nl).split(' '));
        buffered = buffered.slice(nl + 1);
      }
    });
    // The host's event loop must not wait for the forker: it ends with the request pipe.
    this.child.unref();
    (events as Socket).unref();
  }

  /** Ready to fork: started, its pipes opened, and not gone since. */
  get usable(): boolean {
    return this.state === 'ready' && !this.closed;
  }

  private event([word, id, detail, more]: string[]): void {
    if (word === 'ready') {
      this.open(Number(detail), Number(more), id);
      return;
    }
    if (word !== 'exit') return;
    const chain = this.chains.get(id!);
    if (chain === undefined) return;
    this.forget(id!);
    const status = Number(detail);
    const signal = status & 127;
    chain.emit('exit', signal === 0 ? status >> 8 : null, signal === 0 ? null : this.signalName(signal));
  }

  /** The forker is up: its request and reply pipes are opened here, and it is told so. */
  private open(requestEnd: number, replyEnd: number, pid: string | undefined): void {
    if (this.state !== 'starting' || this.closed || pid !== String(this.child.pid)) return;
    try {
      this.requestFd = openSync(`/proc/${pid}/fd/${requestEnd}`, 'w');
      this.replyFd = openSync(`/proc/${pid}/fd/${replyEnd}`, 'r');
      this.send(['hello']);
      this.state = 'ready';
    } catch {
      this.child.kill('SIGKILL');
      this.gone();
    }
  }

  /** While a chain of it runs, the forker's events keep the host's loop alive, as a child would. */
  private track(id: string, chain: ForkedChain): void {
    this.chains.set(id, chain);
    (this.child.stdout as Socket).ref();
  }

  private forget(id: string): void {
    this.chains.delete(id);
    if (this.chains.size === 0) (this.child.stdout as Socket).unref();
  }

  private signalName(n: number): NodeJS.Signals {
    for (const [name, num] of Object.entries(osConstants.signals)) if (num === n) return name as NodeJS.Signals;
    return 'SIGKILL';
  }

  /** The forker is gone: every chain it had is gone with it (its parent-death signal). */
  private gone(): void {
    if (this.state === 'gone') return;
    this.state = 'gone';
    for (const tell of this.whenGone.splice(0)) tell();
    for (const fd of [this.requestFd, this.replyFd]) if (fd >= 0) closeSync(fd);
    this.requestFd = -1;
    this.replyFd = -1;
    const chains = [...this.chains.entries()];
    for (const [id, chain] of chains) {
      this.forget(id);
      chain.emit('exit', null, 'SIGKILL');
    }
  }

  /** Fork a chain now; throws with why when the forker cannot (then spawn it instead). */
  fork(spec: ForkSpec): ChildProcess {
    if (!this.usable) throw new Error('the chain forker is not ready');
    const id = String((this.nextId += 1));
    // The launcher's arguments (isolatedChainArgv after `--`), its parent the forker.
    const args = isolatedChainArgv(this.plan, this.child.pid!).slice(4);
    // As a spawn does, an entry without a value is left out.
    const env = Object.entries(spec.env)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => `${name}=${value}`);
    const words = ['fork', id, spec.cwd, String(env.length), ...env, ...args];
    // What a spawn would refuse (ERR_INVALID_ARG_VALUE) is refused here too: a NUL would shift
    // every later word of the request.
    if (words.some((word) => word.includes('\0')) || Object.keys(spec.env).some((name) => name === '' || name.includes('='))) {
      throw new Error('an environment entry or argument the chain cannot be given');
    }
    this.send(words);
    const [word, ...rest] = this.readReply();
    if (word !== 'chain') throw new Error(rest.join(' ') || 'the chain forker did not answer');
    const [pid, ...fds] = rest.map(Number);
    const ends: Socket[] = [];
    try {
      // The chain's stdin is written, its stdout, stderr and status read: each through the forker's end.
      fds.forEach((fd, i) => {
        ends.push(new Socket({ fd: openSync(`/proc/${this.child.pid}/fd/${fd}`, i === 0 ? 'w' : 'r'), readable: i > 0, writable: i === 0 }));
      });
    } catch (error) {
      for (const end of ends) end.destroy();
      try {
        process.kill(-pid!, 'SIGKILL');
      } catch {
        // gone already
      }
      throw new Error(`could not open the chain's pipes: ${errorText(error)}`);
    } finally {
      this.send(['opened', id]);
    }
    // A pipe cannot be shut down as a socket can: the end of the input is the end of the fd.
    ends[0]!.on('finish', () => ends[0]!.destroy());
    const chain = new ForkedChain(pid!, ends[0]!, ends[1]!, ends[2]!, ends[3]!);
    this.track(id, chain);
    return chain as unknown as ChildProcess;
  }

  /** A whole request on the request pipe (blocking; a write may take only part of it). */
  private send(words: readonly string[]): void {
    const bytes = request(words);
    for (let at = 0; at < bytes.length; ) at += writeSync(this.requestFd, bytes, at, bytes.length - at);
  }

  /** One line from the reply pipe (blocking: the forker answers at once). */
  private readReply(): string[] {
    const buffer = Buffer.alloc(256);
    let line = '';
    for (;;) {
      const got = readSync(this.replyFd, buffer, 0, buffer.length, null);
      if (got === 0) throw new Error('the chain forker ended');
      line += buffer.toString('utf8', 0, got);
      const nl = line.indexOf('\n');
      if (nl >= 0) return line.slice(0, nl).split(' ');
    }
  }

  /** Fork no more: the forker ends once its last chain has ended. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.requestFd >= 0) closeSync(this.requestFd);
    this.requestFd = -1;
    if (this.state !== 'ready') this.child.kill('SIGKILL');
  }

  /**
   * Resolves once the forker has exited (and was reaped here). The host waits for it before it
   * ends, so nothing it started outlives it: after `close`, the forker ends with its last chain;
   * one still there after `graceMs` is killed.
   */
  ended(graceMs: number): Promise<void> {
    if (this.state === 'gone') return Promise.resolve();
    // Waited for: the forker (unref'd while it serves) now holds the host's loop until it is gone.
    this.child.ref();
    (this.child.stdout as Socket).ref();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      this.whenGone.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
