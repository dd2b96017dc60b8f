// The live panel of `prun batch` and `prun status --watch` on a real terminal (a tmux pane),
// asserted on what a person sees; and that nobody else gets a panel or an escape code.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, ledger, openGate, prun, prunBin, sandbox, waitFor, writePlan, type Sandbox } from './helpers.js';
import { Terminal, haveTmux } from '../../../tools/tmux-terminal.mjs';

const ESC = '\u001b';
const haveScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

let box: Sandbox | null = null;
let terminal: Terminal | null = null;
afterEach(() => {
  terminal?.close();
  terminal = null;
  box?.cleanup();
  box = null;
});

const unit = (id: string, extra: Record<string, unknown> = {}, markers = '') => ({ id, prompt: `UNIT-ID:${id} ${markers}`, ...extra });

/** The header line of the panel on a screen, or null when no panel is drawn. */
const header = (screen: string): string | null => screen.split('\n').find((line) => line.startsWith('prun batch ')) ?? null;

describe('prun batch on a terminal', () => {
  it('draws a panel whose counts move, marks a stalled unit, and gives way to the final table', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    box = sandbox({ PRUN_STALL_THRESHOLD: '1' });
    const plan = writePlan(box.root, [
      unit('held', {}, '[[gate hold]]'),
      unit('a1'),
      unit('a2', { depends_on: ['a1'] }),
      unit('a3', { depends_on: ['a2'] }),
    ]);
    terminal = new Terminal(box.root, 'batch');
    terminal.start([process.execPath, prunBin, 'batch', plan, '--dir', 'fanout', '--jobs', '2'], { env: { ...box.env, TERM: 'xterm-256color' }, cwd: box.root });
    const headers = new Set<string>();
    // `held` waits at its gate writing nothing: past the 1 s threshold it is marked.
    const stalledScreen = await terminal.waitForScreen((screen) => {
      const line = header(screen);
      if (line !== null) headers.add(/(\d+)\/4 done/.exec(line)?.[1] ?? '?');
      return /^ {2}held +running .*STALLED$/m.test(screen) && /3\/4 done/.test(line ?? '');
    }, 'the three quick units done and held marked stalled');
    // The counts moved while the person watched (at least one frame before all three were done).
    expect([...headers].filter((n) => n !== '3').length).toBeGreaterThan(0);
    expect(header(stalledScreen)).toMatch(/^prun batch fanout {2}3\/4 done {2}1 running {2}elapsed \d+s {2}ETA \d+s$/);
    // The stall is also said once, above the panel, as the plain output says it.
    expect(stalledScreen).toMatch(/^prun: unit held stalled: no output for \d+s/m);
    expect(terminal.exitCode()).toBeNull();

    openGate(box, 'hold');
    const final = await terminal.waitForScreen(() => terminal!.exitCode() !== null, 'the batch to end');
    expect(terminal.exitCode()).toBe(0);
    // The panel is gone; the table is where it was.
    expect(header(final)).toBeNull();
    expect(final).not.toContain('STALLED');
    expect(final).toMatch(/^UNIT +STATUS +EXIT +RESULT +NOTE$/m);
    expect(final).toMatch(/^held +done(\(stalled\))? +0 +results\/held\.md$/m);
    expect(final).toMatch(/^batch .*fanout: done=4 failed=0 .* exit=0$/m);
    // No progress lines on a terminal with a panel: the panel is the progress.
    expect(final).not.toMatch(/^prun: (started|done) /m);
  }, 90_000);

  it('cuts a line of combining characters by the columns it takes, and never wraps it', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    box = sandbox();
    const plan = writePlan(box.root, [unit('held', {}, '[[gate hold]]')]);
    // 60 columns of `é` spelled as e + U+0301 (which takes none), in a 50-column pane: the
    // header is cut where the columns run out (38 of them after `prun batch `), not where the
    // code points would (a count of code points, or the estimate used until string-width has
    // loaded, cuts it far earlier), and it is never wrapped onto a second line.
    const dir = 'e\u0301'.repeat(60);
    terminal = new Terminal(box.root, 'wide');
    terminal.start([process.execPath, prunBin, 'batch', plan, '--dir', dir, '--jobs', '1'], { env: { ...box.env, TERM: 'xterm-256color' }, cwd: box.root, columns: 50 });
    const expected = `prun batch ${'\u00e9'.repeat(38)}\u2026`;
    const screen = await terminal.waitForScreen((s) => s.normalize('NFC').split('\n').includes(expected), 'the header cut at 50 columns');
    const lines = screen.normalize('NFC').split('\n');
    // One header on the screen and in its scroll-back (no earlier frame, cut by the estimate
    // before string-width had loaded, left behind), and below it no line that is the rest of it.
    // (The `batch directory` message above it wraps, as any message does.)
    expect(lines.filter((line) => line.startsWith('prun batch '))).toEqual([expected]);
    expect(lines.slice(lines.indexOf(expected) + 1).filter((line) => line.startsWith('\u00e9'))).toEqual([]);
    openGate(box, 'hold');
    const final = await terminal.waitForScreen(() => terminal!.exitCode() !== null, 'the batch to end');
    expect(terminal.exitCode()).toBe(0);
    expect(header(final)).toBeNull();
  }, 90_000);

  it('shows the quota group and a countdown while a unit is deferred to a reset', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    box = sandbox();
    const quota = join(box.root, 'quota.json');
    // The Gemini group exhausted with a reset the gate cannot read: refused, retried after --quota-wait.
    const usage = { groups: [{ name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0, reset_time: 'soon' }] }] };
    writeFileSync(quota, JSON.stringify({ cached_at: Date.now() / 1000, usage }));
    const env: NodeJS.ProcessEnv = { ...box.env, AGY_QUOTA_CACHE: quota, TERM: 'xterm-256color' };
    delete env.PRUN_AGY_QUOTA_GATE;
    const plan = writePlan(box.root, [unit('q1')]);
    terminal = new Terminal(box.root, 'quota');
    terminal.start([process.execPath, prunBin, 'batch', plan, '--dir', 'fanout', '--quota-wait', '40'], { env, cwd: box.root });
    const countdown = /^quota: Gemini 0% left {2}1 deferred, next try in (\d+)s$/m;
    const first = await terminal.waitForScreen((screen) => countdown.test(screen), 'the deferral countdown');
    expect(first).toMatch(/^ {2}q1 +deferred +- +no tail +retry in \d+s$/m);
    const from = Number(countdown.exec(first)![1]);
    expect(from).toBeGreaterThan(20);
    expect(from).toBeLessThanOrEqual(40);
    // It counts down on its own, with nothing else happening.
    await terminal.waitForScreen((screen) => Number(countdown.exec(screen)?.[1] ?? from) < from, 'the countdown to move');
    terminal.keys('C-c');
    // Ctrl-C reaches the whole foreground group, the pane's sh too: the table's last line tells prun's exit code.
    const final = await terminal.waitForScreen((screen) => /exit=130$/m.test(screen), 'the batch to stop');
    expect(header(final)).toBeNull();
    expect(final).toMatch(/^q1 +deferred +75 /m);
  }, 90_000);
});

/** Run a batch with stderr on a pty (util-linux `script`) and stdout in a file; `screen` is every byte the terminal got. */
function batchInPty(b: Sandbox, args: string[], env: NodeJS.ProcessEnv): Promise<{ screen: string; stdout: string; code: number | null }> {
  const stdoutFile = join(b.root, `stdout-${Math.random().toString(16).slice(2)}.txt`);
  const quote = (a: string): string => `'${a.replaceAll("'", "'\\''")}'`;
  const command = `${[process.execPath, prunBin, ...args].map(quote).join(' ')} > ${quote(stdoutFile)}`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], { env, cwd: b.root, stdio: ['ignore', 'pipe', 'pipe'] });
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ screen, stdout: readFileSync(stdoutFile, 'utf8'), code })));
}

describe('plain output wherever a panel does not belong', () => {
  it('off a terminal: the same lines as ever, no escape code', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [unit('p1'), unit('p2', {}, '[[agy EXIT=3]]')]);
    const r = await prun(['batch', plan, '--dir', 'fanout'], { env: { ...box.env, TERM: 'xterm-256color' }, cwd: box.root });
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).not.toContain(ESC);
    expect(String(r.stdout)).not.toContain(ESC);
    expect(String(r.stderr).split('\n')).toEqual([`prun: batch directory ${join(box.root, 'fanout')}`, 'prun: unit p2 failed (exit 3): Agy exited with code 3']);
  }, 60_000);

  it('on a terminal under NO_COLOR, TERM=dumb or an AI agent: the plain progress lines, no escape code', async (ctx) => {
    if (!haveScript) ctx.skip('util-linux `script` is not installed: no pty to run in');
    box = sandbox();
    const b = box;
    const plan = writePlan(b.root, [unit('p1')]);
    for (const [n, extra] of [{ NO_COLOR: '1', TERM: 'xterm' }, { TERM: 'dumb' }, { TERM: 'xterm', AI_AGENT: '1' }].entries()) {
      const r = await batchInPty(b, ['batch', plan, '--dir', `fanout-${n}`], { ...b.env, ...extra });
      const what = JSON.stringify(extra);
      expect(r.code, what).toBe(0);
      expect(r.screen, what).not.toContain(ESC);
      const lines = r.screen.split(/\r?\n/).filter(Boolean);
      // An agent caller gets no progress lines at all (as before); a person with NO_COLOR or a dumb terminal gets them.
      const progress = extra.AI_AGENT ? [] : ['prun: started p1', 'prun: done p1'];
      expect(lines, what).toEqual([`prun: batch directory ${join(b.root, `fanout-${n}`)}`, ...progress]);
      expect(r.stdout, what).toMatch(/^UNIT +STATUS/);
    }
  }, 90_000);
});

describe('prun status --watch', () => {
  it('shows the same panel from another terminal, never takes the lock, and ends with the batch', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    box = sandbox({ PRUN_STALL_THRESHOLD: '1' });
    const b = box;
    const plan = writePlan(b.root, [unit('w1'), unit('held', {}, '[[gate hold]]')]);
    const dir = join(b.root, 'fanout');
    // The batch runs in "the first terminal" (here off a TTY); the watch in a second one.
    const batch = prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
    await waitFor(() => existsSync(join(dir, 'ledger.jsonl')) && latestStatus(dir).w1 === 'done' && ledger(dir).some((l) => l.id === 'held' && l.status === 'running'), 'w1 done and held running');
    const lockBefore = readFileSync(join(dir, 'driver.lock'), 'utf8');
    terminal = new Terminal(b.root, 'watch');
    terminal.start([process.execPath, prunBin, 'status', 'fanout', '--watch'], { env: { ...b.env, TERM: 'xterm-256color' }, cwd: b.root });
    const watching = await terminal.waitForScreen((screen) => /^ {2}held +running .*STALLED$/m.test(screen), 'the watched panel with held stalled');
    expect(header(watching)).toMatch(/^prun batch fanout {2}1\/2 done {2}1 running {2}elapsed \d+/);
    // Read-only: the watcher holds no lock of any kind, and the lock file still names the driver.
    const watcherPids = descendants(terminal.panePid());
    const locks = readFileSync('/proc/locks', 'utf8').split('\n');
    for (const pid of watcherPids) expect(locks.some((line) => line.split(/\s+/)[4] === String(pid)), `lock held by watcher pid ${pid}`).toBe(false);
    expect(readFileSync(join(dir, 'driver.lock'), 'utf8')).toBe(lockBefore);

    openGate(b, 'hold');
    expect((await batch).exitCode).toBe(0);
    const final = await terminal.waitForScreen(() => terminal!.exitCode() !== null, 'the watch to end with the batch');
    expect(terminal.exitCode()).toBe(0);
    expect(header(final)).toBeNull();
    expect(final, JSON.stringify(final)).toMatch(/^UNIT +STATUS +EXIT +RESULT +DETAIL$/m);
    expect(final).toMatch(/^held +done +0 +present$/m);
  }, 90_000);

  it('gives the cursor back when Ctrl-C ends the watch', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    const { b, batch } = await heldBatch();
    terminal = new Terminal(b.root, 'watch');
    // The pane's shell outlives the watch (its own Ctrl-C caught, as an interactive shell's is),
    // so the terminal is looked at as the person sees it at their prompt again.
    const shell = 'trap : INT; "$@"; echo "watch exit $?"; exec sleep 60';
    terminal.start(['sh', '-c', shell, 'sh', process.execPath, prunBin, 'status', 'fanout', '--watch'], { env: { ...b.env, TERM: 'xterm-256color' }, cwd: b.root });
    await terminal.waitForScreen((screen) => header(screen) !== null && !terminal!.cursorShown(), 'the panel with the cursor hidden');
    // The watch handles no signal of its own: Ctrl-C ends it by SIGINT's default action (130,
    // as before), with the cursor shown first.
    terminal.keys('C-c');
    // (The terminal echoes the Ctrl-C as `^C` at the start of that line.)
    await terminal.waitForScreen((screen) => /watch exit 130$/m.test(screen) && terminal!.cursorShown(), 'the watch ended with the cursor shown');
    openGate(b, 'hold');
    expect((await batch).exitCode).toBe(0);
  }, 90_000);

  it('gives the cursor back on Ctrl-Z and hides it again on fg', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    const { b, batch } = await heldBatch();
    terminal = new Terminal(b.root, 'watch');
    terminal.start([process.execPath, prunBin, 'status', 'fanout', '--watch'], { env: { ...b.env, TERM: 'xterm-256color' }, cwd: b.root });
    await terminal.waitForScreen((screen) => header(screen) !== null && !terminal!.cursorShown(), 'the panel with the cursor hidden');
    terminal.keys('C-z');
    await terminal.waitForScreen((screen) => header(screen) === null && terminal!.cursorShown(), 'the panel erased and the cursor shown on Ctrl-Z');
    for (const pid of descendants(terminal.panePid())) spawnSync('kill', ['-CONT', String(pid)]);
    await terminal.waitForScreen((screen) => header(screen) !== null && !terminal!.cursorShown(), 'the panel back with the cursor hidden after SIGCONT');
    openGate(b, 'hold');
    expect((await batch).exitCode).toBe(0);
    await terminal.waitForScreen(() => terminal!.exitCode() !== null, 'the watch to end with the batch');
    expect(terminal.exitCode()).toBe(0);
  }, 90_000);
});

/** A batch (off a terminal) whose one unit `held` runs until its gate opens, once it runs. */
async function heldBatch(): Promise<{ b: Sandbox; batch: ReturnType<typeof prun> }> {
  box = sandbox();
  const b = box;
  const plan = writePlan(b.root, [unit('held', {}, '[[gate hold]]')]);
  const dir = join(b.root, 'fanout');
  const batch = prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
  await waitFor(() => existsSync(join(dir, 'ledger.jsonl')) && ledger(dir).some((l) => l.id === 'held' && l.status === 'running'), 'held running');
  return { b, batch };
}

/** A process and every process below it, from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of spawnSync('ls', ['/proc'], { encoding: 'utf8' }).stdout.split('\n')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i += 1) out.push(...(children.get(out[i]!) ?? []));
  return out;
}
