// zsh's completion system at a real terminal (tmux): the other tests drive each shell's
// completion function directly; this one types TAB into an interactive zsh with compinit, so
// the script is known to work with zsh's own compadd/_files, not just with the driver's.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prun } from './helpers.js';

const have = (tool: string) => spawnSync(tool, ['-V'], { stdio: 'ignore' }).status === 0;
const available = have('tmux') && spawnSync('zsh', ['-c', 'exit 0'], { stdio: 'ignore' }).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'prun-pty-'));
const session = `prun-completion-${process.pid}`;

afterAll(() => {
  spawnSync('tmux', ['kill-session', '-t', session], { stdio: 'ignore' });
  rmSync(scratch, { recursive: true, force: true });
});

function tmux(...args: string[]): string {
  const result = spawnSync('tmux', args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Resolves once the pane shows `text` (the terminal's own output is the event waited for). */
async function paneShows(text: string, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pane = tmux('capture-pane', '-p', '-t', session);
    if (pane.includes(text)) return pane;
    if (Date.now() > deadline) throw new Error(`the pane never showed ${JSON.stringify(text)}:\n${pane}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

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
    const env = `env -i PATH=${process.env.PATH} HOME=${config} ZDOTDIR=${config} TERM=xterm`;
    tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', '-c', cwd, `${env} zsh -d -i`);
    await paneShows('READY>', 60_000);

    tmux('send-keys', '-t', session, 'prun job run --', 'Tab');
    const flags = await paneShows('--background');
    for (const flag of ['--cwd', '--profile', '--timeout', '--help']) expect(flags).toContain(flag);

    tmux('send-keys', '-t', session, 'C-u', 'prun dispatch --mode ', 'Tab');
    await paneShows('accept-edits');

    tmux('send-keys', '-t', session, 'C-u', 'prun job run --cwd pl', 'Tab');
    await paneShows('prun job run --cwd plans/');

    expect(readdirSync(cwd)).toEqual(['plans']);
    expect(readdirSync(join(cwd, 'plans'))).toEqual([]);
  });
});
