import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionScript, SHELLS, type BinSpec } from '@prun/kit/spec';
// @ts-expect-error: a plain .mjs tool shared by the completion tests of every package
import { complete, haveShell } from '../../../tools/completion-driver.mjs';
import { DEMO } from './spec-fixture.js';

type Complete = (shell: string, script: string, line: string, options: { cwd: string; descriptions?: boolean }) => string[];
const run = complete as Complete;

// The directory completion runs in: a few names to complete, and a snapshot to prove that
// completing wrote nothing (the old fish script created a file named `1`).
let cwd: string;
let before: string[];
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), 'prun-completion-'));
  mkdirSync(join(cwd, 'somedir'));
  writeFileSync(join(cwd, 'somefile.txt'), '');
  before = readdirSync(cwd).sort();
});
afterAll(() => {
  try {
    expect(readdirSync(cwd).sort()).toEqual(before);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

for (const shell of SHELLS) {
  const available = haveShell(shell) as boolean;
  describe.skipIf(!available)(`${shell} completion${available ? '' : ` (skipped: ${shell} is not installed)`}`, () => {
    const script = completionScript(DEMO, shell);
    const at = (line: string) => run(shell, script, line, { cwd });
    const files = shell === 'zsh' ? ['<files>'] : [shell === 'fish' ? 'somedir/' : 'somedir', 'somefile.txt'];
    const dirs = shell === 'zsh' ? ['<dirs>'] : [shell === 'fish' ? 'somedir/' : 'somedir'];

    it('offers subcommands, nested subcommands, never hidden ones', () => {
      expect(at('demo-bin ')).toEqual(expect.arrayContaining(['job', 'exec', 'watch']));
      expect(at('demo-bin j')).toEqual(['job']);
      const nested = at('demo-bin job ');
      expect(nested).toEqual(expect.arrayContaining(['run', 'wait']));
      expect(nested).not.toContain('__names');
    });

    it('offers the options of the command being typed, nested ones included', () => {
      const options = at('demo-bin job run --');
      expect(options).toEqual(expect.arrayContaining(['--cwd', '--mode', '--timeout', '--count', '--background', '--help', '--version']));
      expect(options).not.toContain('--json');
      expect(at('demo-bin --')).toEqual(expect.arrayContaining(['--json', '--listing', '--help']));
      expect(at('demo-bin job run --back')).toEqual(['--background']);
      // An option's value is not taken for a subcommand or positional.
      expect(at('demo-bin job run --timeout 5 --b')).toEqual(['--background']);
    });

    it('completes values: choices, files, directories, job names', () => {
      expect(at('demo-bin job run --mode ').sort()).toEqual(['accept-edits', 'plan']);
      expect(at('demo-bin job run --mode p')).toEqual(['plan']);
      expect(at('demo-bin --listing some').sort()).toEqual(files);
      expect(at('demo-bin job run --cwd some')).toEqual(dirs);
      expect(at('demo-bin job run --add-dir x --cwd some')).toEqual(dirs);
      expect(at('demo-bin job wait ').sort()).toEqual(['alpha', 'beta']);
      expect(at('demo-bin watch some')).toEqual(dirs);
      expect(at('demo-bin job run --timeout ')).toEqual([]);
    });

    it('completes --opt=value where the shell keeps it one word', () => {
      if (shell === 'bash') return; // readline splits at '=' (COMP_WORDBREAKS); covered by the spaced form
      const offered = at('demo-bin job run --mode=p');
      expect(offered.map((word) => word.replace(/^--mode=/, ''))).toEqual(['plan']);
    });

    it('after -- offers commands, then files', () => {
      const commands = at('demo-bin exec -- ech');
      if (shell === 'zsh') expect(commands).toEqual(['<commands>']);
      else expect(commands).toContain('echo');
      expect(at('demo-bin exec --keep A -- echo some').sort()).toEqual(shell === 'zsh' ? ['<files>'] : files);
    });
  });
}

// fish shows each offer's description: an apostrophe or a backslash in it must survive quoting
// (an earlier script dropped apostrophes: "print the jobs final answer").
const fishAvailable = haveShell('fish') as boolean;
describe.skipIf(!fishAvailable)(`fish completion descriptions${fishAvailable ? '' : ' (skipped: fish is not installed)'}`, () => {
  const QUOTED: BinSpec = {
    name: 'quote-bin',
    summary: 'quotes',
    usage: ['COMMAND'],
    options: [{ long: '--answer', help: "print the job's final answer" }],
    commands: [{ name: 'peek', summary: 'the job\'s log, a \\ backslash and "double" quotes' }],
    exitCodes: [],
  };
  // complete() throws when fish exits non-zero or prints anything on stderr.
  const described = (line: string): string[] => run('fish', completionScript(QUOTED, 'fish'), line, { cwd, descriptions: true });

  it('keeps apostrophes, backslashes and double quotes in option and command descriptions', () => {
    expect(described('quote-bin --ans')).toEqual(["--answer\tprint the job's final answer"]);
    expect(described('quote-bin pe')).toEqual(['peek\tthe job\'s log, a \\ backslash and "double" quotes']);
  });
});
