// A real terminal for the live-view tests (prun's panel, prun-monitor's view; typed by
// tmux-terminal.d.mts beside it): a private tmux server (its own socket in the test's
// temp dir, so nobody else's sessions are touched) running one command in a pane of a known size.
// `screen()` is what a person would see on that terminal at that moment.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const haveTmux = spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;

const quote = (word) => `'${word.replaceAll("'", "'\\''")}'`;

export class Terminal {
  constructor(root, name) {
    this.root = root;
    this.socket = join(root, `tmux-${name}.sock`);
    this.exitFile = join(root, `tmux-${name}.exit`);
  }

  /** Run `argv` (cwd `cwd`, environment exactly `env`) in a `columns`x`rows` pane that stays on screen after it ends. */
  start(argv, options) {
    const conf = join(this.root, 'tmux.conf');
    writeFileSync(conf, 'set -g remain-on-exit on\nset -g status off\nset -g history-limit 2000\n');
    const envArgs = Object.entries(options.env).map(([key, value]) => `${key}=${value ?? ''}`);
    // `env -i ...`: the command sees only the test's environment, not the tmux server's.
    const command = `cd ${quote(options.cwd)} && env -i ${envArgs.map(quote).join(' ')} ${argv.map(quote).join(' ')}; echo $? > ${quote(this.exitFile)}`;
    const started = spawnSync(
      'tmux',
      ['-S', this.socket, '-f', conf, 'new-session', '-d', '-x', String(options.columns ?? 120), '-y', String(options.rows ?? 30), 'sh', '-c', command],
      { env: { PATH: process.env.PATH, TERM: 'xterm-256color', HOME: options.env.HOME } },
    );
    if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr}`);
    if (process.env.PRUN_TEST_TMUX_RAW) spawnSync('tmux', ['-S', this.socket, 'pipe-pane', '-o', `cat >> ${quote(process.env.PRUN_TEST_TMUX_RAW)}`]);
  }

  /** The screen and what scrolled off it, trailing blanks trimmed (tmux's own `Pane is dead` line left out). */
  screen() {
    const shot = spawnSync('tmux', ['-S', this.socket, 'capture-pane', '-p', '-S', '-'], { encoding: 'utf8' });
    return shot.stdout.replace(/\nPane is dead \(.*\)\s*$/, '').replace(/\s+$/, '');
  }

  /** Keys typed at the terminal (`C-c` for Ctrl-C). */
  keys(...keys) {
    spawnSync('tmux', ['-S', this.socket, 'send-keys', ...keys]);
  }

  /** Whether the pane shows its cursor (tmux's cursor_flag). */
  cursorShown() {
    return spawnSync('tmux', ['-S', this.socket, 'display-message', '-p', '#{cursor_flag}'], { encoding: 'utf8' }).stdout.trim() === '1';
  }

  /** The pid of the process the pane runs (the sh that runs the command). */
  panePid() {
    return Number(spawnSync('tmux', ['-S', this.socket, 'list-panes', '-F', '#{pane_pid}'], { encoding: 'utf8' }).stdout.trim());
  }

  /** The command's exit code once it has ended, else null. */
  exitCode() {
    return existsSync(this.exitFile) && readFileSync(this.exitFile, 'utf8').trim() !== '' ? Number(readFileSync(this.exitFile, 'utf8').trim()) : null;
  }

  /** Look at the screen until `check` holds (it is given every look) or the deadline passes. */
  async waitForScreen(check, what, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (check(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the screen:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  close() {
    spawnSync('tmux', ['-S', this.socket, 'kill-server'], { stdio: 'ignore' });
  }
}
