// The live view in a real pseudo-terminal (util-linux `script`): what a person at a terminal
// sees on stderr, and that nothing changes for anyone else.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { STATE_FILES } from '@prun/unit-state';
import { Terminal, haveTmux } from '../../../tools/tmux-terminal.mjs';
import { GrowthMeter, formatBytes, formatElapsed, liveLine, liveViewOn } from '../src/live.js';
import { makeStateDir, monitorBin, monitorEnv, run, tempDirs } from './helpers.js';

const { base } = tempDirs(afterAll);

const haveScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
const ESC = '\u001b';
/** A frame of two lines erased line by line, ending at column 1 of its first line. */
const ERASE_TWO = `${ESC}[2K${ESC}[1A${ESC}[2K${ESC}[1A${ESC}[2K${ESC}[G`;

interface PtyRun {
  /** Everything the terminal received (the monitor's stderr; stdout goes to a file). */
  screen: string;
  stdout: string;
  code: number | null;
}

/**
 * Run prun-monitor with stderr on a pty and stdout in a file, as `prun-monitor ... > events`
 * typed at a terminal. `onScreen` sees the terminal output as it arrives.
 */
function inPty(
  dir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onScreen: (screen: string) => void = () => {},
  stdinFile?: string,
): Promise<PtyRun> {
  const stdoutFile = join(dir, `stdout-${Math.random().toString(16).slice(2)}.txt`);
  const quote = (a: string): string => `'${a.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, monitorBin, ...args].map(quote).join(' ');
  const redirects = `${stdinFile === undefined ? '' : ` < ${quote(stdinFile)}`} > ${quote(stdoutFile)}`;
  // `script` reports the command's exit status as its own (-e).
  const child = spawn('script', ['-qefc', `${command}${redirects}`, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    screen += chunk;
    onScreen(screen);
  });
  return new Promise((resolve) => {
    child.on('close', (code) => resolve({ screen, stdout: readFileSync(stdoutFile, 'utf8'), code }));
  });
}

describe('prun-monitor live view in a pty', () => {
  it('shows each unit with its elapsed time and tail growth, then clears itself; stdout is unchanged', async (ctx) => {
    if (!haveScript) ctx.skip('util-linux `script` is not installed: no pty to run in');
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'start\n' });
    const u2 = makeStateDir(b, 'u2', { tail: null });
    const settings = { PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_POLL: '30', PRUN_MONITOR_TIMEOUT: '4' };
    // A worker writing its tail, as live ones do (the monitor itself never wakes for it).
    const writer = setInterval(() => appendFileSync(join(u1.dir, STATE_FILES.tail), `${'x'.repeat(99)}\n`), 50);
    let growing = false;
    const r = await inPty(b, [u1.dir, u2.dir], { ...monitorEnv(settings), TERM: 'xterm' }, (screen) => {
      growing ||= /u1 growing {2}\ds {2}tail [\d.]+ (B|KiB) \+[1-9][\d.]* (B|KiB)\/s/.test(screen);
    });
    clearInterval(writer);
    expect(growing).toBe(true);
    expect(r.code).toBe(2);
    // Elapsed time moves on between looks (a 30 s poll: only the view's own tick redraws).
    expect(r.screen).toMatch(/u1 growing {2}[2-9]s {2}tail/);
    expect(r.screen).toMatch(/u2 growing {2}\ds {2}no tail/);
    // Redrawn in place, line by line (never erased to the end of the screen), and gone at the
    // end: the last thing written is the erase and the cursor shown again.
    expect(r.screen).toContain(ERASE_TWO);
    expect(r.screen).not.toContain(`${ESC}[J`);
    expect(r.screen.trimEnd().endsWith(`${ERASE_TWO}${ESC}[?25h`)).toBe(true);
    // stdout (a file here) is exactly what a coordinator parses.
    expect(r.stdout).toBe('MONITOR-START units=2 stall-threshold=600s timeout=4s\nMONITOR-EVENT timeout\nUNIT u1 growing\nUNIT u2 growing\n');
  });

  it('NO_COLOR, TERM=dumb and an AI-agent caller get no view and no escape code; stdout byte-exact', async (ctx) => {
    if (!haveScript) ctx.skip('util-linux `script` is not installed: no pty to run in');
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const u2 = makeStateDir(b, 'u2', { result: '# u2 result (FALLBACK, Agy wrote no final result)\n' });
    const plain = await run(monitorBin, [u1.dir, u2.dir], monitorEnv());
    expect(plain.stdout).toBe('MONITOR-START units=2 stall-threshold=1s timeout=8s\nMONITOR-EVENT fail\nUNIT u1 done\nUNIT u2 failed(fallback)\n');
    for (const extra of [{ NO_COLOR: '1', TERM: 'xterm' }, { TERM: 'dumb' }, { TERM: 'xterm', AI_AGENT: '1' }, { TERM: 'xterm', CLAUDECODE: '1' }]) {
      const r = await inPty(b, [u1.dir, u2.dir], { ...monitorEnv(), ...extra });
      expect(r.code, JSON.stringify(extra)).toBe(3);
      expect(r.screen, JSON.stringify(extra)).not.toContain(ESC);
      expect(r.screen.trim(), JSON.stringify(extra)).toBe('');
      expect(r.stdout, JSON.stringify(extra)).toBe(plain.stdout);
    }
  });

  it('a skipped stdin line is told on its own line, not drawn over by the view', async (ctx) => {
    if (!haveScript) ctx.skip('util-linux `script` is not installed: no pty to run in');
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const input = join(b, 'input.txt');
    appendFileSync(input, `${u1.dir}\nMONITOR-EVENT fail\n`);
    const r = await inPty(b, ['-'], { ...monitorEnv(), TERM: 'xterm' }, () => {}, input);
    expect(r.code).toBe(0);
    expect(r.screen).toMatch(/(^|\n|\u001b\[G)prun-monitor: stdin line 2 skipped: looks like another tool's output line, not a path: MONITOR-EVENT fail\r?\n/);
    expect(r.stdout).toBe('MONITOR-START units=1 stall-threshold=1s timeout=8s\nMONITOR-EVENT all-done\nUNIT u1 done\n');
  });
});

describe('prun-monitor live view in a tmux pane', () => {
  let terminal: Terminal | null = null;
  afterEach(() => {
    terminal?.close();
    terminal = null;
  });

  /** prun-monitor on `dirs` in a `columns`-wide pane, stdout to a file (`... > events` typed at a terminal). */
  function watchInPane(b: string, name: string, dirs: string[], settings: Record<string, string>, columns = 120, rows = 30): { pane: Terminal; stdoutFile: string } {
    const stdoutFile = join(b, `${name}.stdout`);
    const pane = new Terminal(b, name);
    pane.start(['sh', '-c', 'exec "$@" > "$0"', stdoutFile, process.execPath, monitorBin, ...dirs], {
      env: { ...monitorEnv(settings), HOME: b, TERM: 'xterm-256color' },
      cwd: b,
      columns,
      rows,
    });
    terminal = pane;
    return { pane, stdoutFile };
  }

  const linesStarting = (screen: string, prefix: string): string[] => screen.split('\n').filter((line) => line.startsWith(prefix));

  it('redraws in place without pushing old frames into the scroll-back', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'start\n' });
    const u2 = makeStateDir(b, 'u2', { tail: null });
    const { pane, stdoutFile } = watchInPane(b, 'scroll', [u1.dir, u2.dir], { PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_POLL: '30', PRUN_MONITOR_TIMEOUT: '5' });
    // Three redraws at least (0s, 1s, 2s, 3s): the screen with its scroll-back holds one frame,
    // where erasing to the end of the screen from the pane's top-left corner (ESC[2F ESC[J) left
    // every earlier frame in tmux's history.
    const shown = await pane.waitForScreen((screen) => /^u2 growing {2}[3-9]s {2}no tail$/m.test(screen), 'the view redrawn at 3s');
    expect(linesStarting(shown, 'u1 ')).toHaveLength(1);
    expect(linesStarting(shown, 'u2 ')).toHaveLength(1);
    const final = await pane.waitForScreen(() => pane.exitCode() !== null, 'the watch to time out');
    expect(pane.exitCode()).toBe(2);
    // Cleared at the end: no frame on the screen or above it.
    expect(linesStarting(final, 'u1 ')).toEqual([]);
    expect(linesStarting(final, 'u2 ')).toEqual([]);
    expect(readFileSync(stdoutFile, 'utf8')).toBe('MONITOR-START units=2 stall-threshold=600s timeout=5s\nMONITOR-EVENT timeout\nUNIT u1 growing\nUNIT u2 growing\n');
  }, 60_000);

  it('keeps to the rows of a short pane: more units than rows are told as a count, and no frame reaches the scroll-back', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    const b = base();
    // 12 units in a 10-row pane: 8 unit lines and "… 4 more" (the cursor's row stays free). A
    // frame as tall as the pane cannot be erased line by line (the cursor cannot go above the top
    // row), so drawing all 12 pushed the first lines into tmux's history at every redraw.
    const dirs = Array.from({ length: 12 }, (_, i) => makeStateDir(b, `u${String(i + 1).padStart(2, '0')}`, { tail: null }).dir);
    const { pane } = watchInPane(b, 'short', dirs, { PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_POLL: '30', PRUN_MONITOR_TIMEOUT: '5' }, 80, 10);
    const shown = await pane.waitForScreen((screen) => /^u08 growing {2}[3-9]s {2}no tail$/m.test(screen), 'the view redrawn at 3s');
    expect(linesStarting(shown, 'u01 ')).toHaveLength(1);
    expect(linesStarting(shown, 'u08 ')).toHaveLength(1);
    expect(linesStarting(shown, 'u09 ')).toEqual([]);
    expect(linesStarting(shown, '\u2026 ')).toEqual(['\u2026 4 more']);
    await pane.waitForScreen(() => pane.exitCode() !== null, 'the watch to time out');
    expect(pane.exitCode()).toBe(2);
  }, 60_000);

  it('cuts a wide (CJK) unit name to the columns of a narrow pane, never wraps it', async (ctx) => {
    if (!haveTmux) ctx.skip('tmux is not installed: no terminal to draw on');
    const b = base();
    // 30 characters of two columns each, in a 30-column pane: cut to 14 of them and an ellipsis
    // (29 columns), where a cut by UTF-16 length (29 characters, 58 columns) wraps onto a second
    // row and the next redraw, moving up one row a line, leaves pieces of old frames behind.
    const wide = makeStateDir(b, '\u6f22\u5b57'.repeat(15), { tail: 'start\n' });
    const u2 = makeStateDir(b, 'u2', { tail: null });
    const { pane } = watchInPane(b, 'wide', [wide.dir, u2.dir], { PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_POLL: '30', PRUN_MONITOR_TIMEOUT: '5' }, 30);
    const expected = `${'\u6f22\u5b57'.repeat(7)}\u2026`;
    const shown = await pane.waitForScreen((screen) => /^u2 growing {2}[2-9]s {2}no tail$/m.test(screen), 'the view redrawn at 2s');
    expect(linesStarting(shown, '\u6f22')).toEqual([expected]);
    expect(linesStarting(shown, '\u5b57')).toEqual([]);
    await pane.waitForScreen(() => pane.exitCode() !== null, 'the watch to time out');
    expect(pane.exitCode()).toBe(2);
  }, 60_000);
});

describe('live view pieces', () => {
  it('is on only for a terminal, a non-dumb TERM, no NO_COLOR and no agent', () => {
    expect(liveViewOn({ TERM: 'xterm' }, true)).toBe(true);
    expect(liveViewOn({}, true)).toBe(true);
    expect(liveViewOn({ TERM: 'xterm' }, false)).toBe(false);
    expect(liveViewOn({ TERM: 'dumb' }, true)).toBe(false);
    expect(liveViewOn({ NO_COLOR: '1' }, true)).toBe(false);
    expect(liveViewOn({ NO_COLOR: '' }, true)).toBe(true);
    expect(liveViewOn({ GEMINI_CLI: '1' }, true)).toBe(false);
  });

  it('formats elapsed time, sizes and a line', () => {
    expect([0, 9_999, 60_000, 245_000, 3_600_000 + 180_000].map(formatElapsed)).toEqual(['0s', '9s', '1m00s', '4m05s', '1h03m']);
    expect([0, 812, 1024, 12_595, 4 * 1024 * 1024].map(formatBytes)).toEqual(['0 B', '812 B', '1.0 KiB', '12.3 KiB', '4.0 MiB']);
    expect(liveLine({ name: 'u\n1', status: 'growing', elapsedMs: 65_000, tailBytes: 2048, growthPerS: 100 })).toBe(
      'u\\x0a1 growing  1m05s  tail 2.0 KiB +100 B/s',
    );
    expect(liveLine({ name: 'u2', status: 'done', elapsedMs: 0, tailBytes: null, growthPerS: null })).toBe('u2 done  0s  no tail');
  });

  it('measures growth over the last few seconds; a truncated tail starts again', () => {
    const meter = new GrowthMeter();
    expect(meter.sample(0, 100)).toBeNull();
    expect(meter.sample(1000, 300)).toBe(200);
    expect(meter.sample(2000, 300)).toBe(100);
    // Older than the window: only the last 5 s count.
    expect(meter.sample(10_000, 300)).toBe(0);
    expect(meter.sample(11_000, 50)).toBeNull();
    expect(meter.sample(12_000, 150)).toBe(100);
    expect(meter.sample(13_000, null)).toBeNull();
  });
});
