// zsh's completion system at a real terminal (tmux): the other tests drive each shell's
// completion function directly; this one types TAB into an interactive zsh with compinit, so
// the script is known to work with zsh's own compadd/_files, not just with the driver's.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Terminal, haveTmux } from '../../../tools/tmux-terminal.mjs';
import { prun } from './helpers.js';

const available = haveTmux && spawnSync('zsh', ['-c', 'exit 0'], { stdio: 'ignore' }).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'prun-pty-'));
// The shared pane: a private tmux server (its socket in `scratch`), so no one's own tmux sessions are touched.
const terminal = new Terminal(scratch, 'completion');

afterAll(() => {
  terminal.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Resolves once the pane shows `text` (the terminal's own output is the event waited for). */
const paneShows = (text: string, timeoutMs = 60_000): Promise<string> => terminal.waitForScreen((screen) => screen.includes(text), JSON.stringify(text), timeoutMs);

describe.skipIf(!available)(`zsh completion at a terminal${available ? '' : ' (skipped: tmux or zsh is not installed)'}`, () => {
  it('TAB offers nested flags, choices and directories, and writes nothing', { timeout: 120_000 }, async () => {
    const config = join(scratch, 'zdotdir');
    const cwd = join(scratch, 'cwd');
    mkdirSync(config);
    mkdirSync(join(cwd, 'plans'), { recursive: true });
    const out = await prun(['completion', 'zsh'], { env: { PATH: process.env.PATH } });
    writeFileSync(join(config, 'prun.zsh'), String(out.stdout));
    // compinit -D: no dump file; PS1 marks the moment the shell is ready for keys.
    writeFileSync(join(config, '.zshrc'), `autoload -U compinit && compinit -D -u\nsource ${join(config, 'prun.zsh')}\nPS1='READY> '\n`);
    terminal.start(['zsh', '-d', '-i'], { env: { PATH: process.env.PATH, HOME: config, ZDOTDIR: config, TERM: 'xterm' }, cwd, columns: 200, rows: 50 });
    await paneShows('READY>', 60_000);

    terminal.keys('prun job run --', 'Tab');
    const flags = await paneShows('--background');
    for (const flag of ['--cwd', '--profile', '--timeout', '--help']) expect(flags).toContain(flag);

    terminal.keys('C-u', 'prun dispatch --mode ', 'Tab');
    await paneShows('accept-edits');

    terminal.keys('C-u', 'prun job run --cwd pl', 'Tab');
    await paneShows('prun job run --cwd plans/');

    expect(readdirSync(cwd)).toEqual(['plans']);
    expect(readdirSync(join(cwd, 'plans'))).toEqual([]);
  });
});
