// `prun completion bash|zsh|fish` in the real shells: what a user's TAB offers for prun itself
// (every bin nested under its command) and for each prun-* bin, in an empty directory that
// must stay empty (the old fish script created a file named `1`).
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs tool shared by the completion tests of every package
import { complete, haveShell } from '../../../tools/completion-driver.mjs';
import { prun } from './helpers.js';

type Complete = (shell: string, script: string, line: string, options: { cwd: string; env: NodeJS.ProcessEnv }) => string[];
const run = complete as Complete;

let scratch: string;
let cwd: string;
let env: NodeJS.ProcessEnv;
const scripts = new Map<string, string>();

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'prun-completion-'));
  cwd = join(scratch, 'cwd');
  mkdirSync(join(cwd, 'plans'), { recursive: true });
  writeFileSync(join(cwd, 'plan.yaml'), '');
  // Stand-ins for the listing commands the scripts call for job names: they prove the script
  // asks the bin (not a scraped table) and passes its answer through.
  const bin = join(scratch, 'bin');
  mkdirSync(bin);
  for (const name of ['prun', 'prun-job']) {
    writeFileSync(join(bin, name), '#!/bin/sh\ncase "$*" in "job __names"|"__names") printf "%s\\n" alpha-1 beta-2 ;; esac\n');
    chmodSync(join(bin, name), 0o755);
  }
  env = { PATH: `${bin}:${process.env.PATH}`, HOME: join(scratch, 'home') };
  for (const shell of ['bash', 'zsh', 'fish']) {
    const out = await prun(['completion', shell], { env: { PATH: process.env.PATH } });
    expect(out.exitCode).toBe(0);
    scripts.set(shell, String(out.stdout));
  }
});
afterAll(() => {
  expect(readdirSync(cwd).sort()).toEqual(['plan.yaml', 'plans']);
  rmSync(scratch, { recursive: true, force: true });
});

for (const shell of ['bash', 'zsh', 'fish']) {
  const available = haveShell(shell) as boolean;
  describe.skipIf(!available)(`prun completion ${shell}${available ? '' : ` (skipped: ${shell} is not installed)`}`, () => {
    const at = (line: string) => run(shell, scripts.get(shell)!, line, { cwd, env });
    const files = shell === 'zsh' ? ['<files>'] : shell === 'fish' ? ['plan.yaml', 'plans/'] : ['plan.yaml', 'plans'];
    const dirs = shell === 'zsh' ? ['<dirs>'] : [shell === 'fish' ? 'plans/' : 'plans'];

    it("offers prun's commands and each bin's subcommands", () => {
      expect(at('prun ')).toEqual(expect.arrayContaining(['batch', 'status', 'clone', 'completion', 'help', 'dispatch', 'job', 'quota', 'env']));
      expect(at('prun job ')).toEqual(expect.arrayContaining(['run', 'resume', 'wait', 'kill', 'peek', 'list']));
      expect(at('prun quota r').sort()).toEqual(['refresh', 'route']);
      expect(at('prun completion ').sort()).toEqual(['bash', 'fish', 'zsh']);
      // `prun help COMMAND`: every command's name, prun's and the fronted bins'; nothing after it.
      expect(at('prun help ')).toEqual(expect.arrayContaining(['batch', 'status', 'help', 'dispatch', 'job', 'quota', 'report-state']));
      expect(at('prun help st').sort()).toEqual(['status']);
      expect(at('prun help job ')).not.toContain('batch');
    });

    it('offers nested flags, the help and version flags included', () => {
      expect(at('prun job run --')).toEqual(expect.arrayContaining(['--profile', '--name', '--background', '--timeout', '--cwd', '--help']));
      // prun-job's commands refuse --version (as multi_agent.py's do): it is not offered there.
      expect(at('prun job run --')).not.toContain('--version');
      expect(at('prun dispatch --')).toEqual(expect.arrayContaining(['--prompt-file', '--unit-id', '--mode', '--add-dir', '--version']));
      expect(at('prun quota route --')).toEqual(expect.arrayContaining(['--model', '--json']));
      expect(at('prun quota route --')).not.toContain('--force');
      expect(at('prun batch --re').sort()).toEqual(['--resume', '--retries', '--retry-failed']);
      expect(at('prun job peek -')).toEqual(expect.arrayContaining(['-n', '-f', '--follow']));
    });

    it('completes values: plan files, directories, choices, job names', () => {
      expect(at('prun batch pl').sort()).toEqual(files);
      expect(at('prun batch --resume pl')).toEqual(dirs);
      expect(at('prun job run --cwd pl')).toEqual(dirs);
      expect(at('prun dispatch --mode ').sort()).toEqual(['accept-edits', 'plan']);
      expect(at('prun report-state --sort ').sort()).toEqual(['path', 'tail-bytes-desc']);
      expect(at('prun job wait ').sort()).toEqual(['alpha-1', 'beta-2']);
      expect(at('prun job kill --all ').sort()).toEqual(['alpha-1', 'beta-2']);
    });

    it("completes each prun-* bin by its own name too", () => {
      expect(at('prun-job ')).toEqual(expect.arrayContaining(['run', 'wait']));
      expect(at('prun-job wait ').sort()).toEqual(['alpha-1', 'beta-2']);
      expect(at('prun-quota route --')).toEqual(expect.arrayContaining(['--model']));
      expect(at('prun-monitor --')).toEqual(expect.arrayContaining(['--json', '--help', '--version']));
      expect(at('prun-snapshot-tail --unit pl')).toEqual(dirs);
      expect(at('prun-model-resolve x --listing pl').sort()).toEqual(files);
      const commands = at('prun-env-scrub --keep A -- ech');
      if (shell === 'zsh') expect(commands).toEqual(['<commands>']);
      else expect(commands).toContain('echo');
    });
  });
}
