import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { QUOTA_EXHAUSTED_EXIT } from '@prun/quota';
import { EXIT, TOOL_COMMANDS } from '../src/index.js';
import { prun, repoRoot, sandbox, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

function binPath(bin: string): string {
  const folder = TOOL_COMMANDS.find((tool) => tool.bin === bin)!;
  const pkg = { 'prun-dispatch-agy': 'dispatcher-agy', 'prun-monitor': 'monitor', 'prun-gather': 'monitor', 'prun-report-state': 'report-state',
    'prun-snapshot-tail': 'snapshot-tail', 'prun-quota': 'quota', 'prun-model-resolve': 'model-resolve', 'prun-env-scrub': 'env-scrub', 'prun-job': 'job-runner' }[folder.bin]!;
  // A bundled bin's shim is CommonJS (`.cjs`), the others ESM (`.js`).
  const shim = join(repoRoot, 'packages', pkg, 'bin', `${bin}.js`);
  return existsSync(shim) ? shim : join(repoRoot, 'packages', pkg, 'bin', `${bin}.cjs`);
}

describe('prun front door', () => {
  it('lists every command with one line each and the exit-code table', async () => {
    box = sandbox();
    const help = await prun(['--help'], { env: box.env });
    expect(help.exitCode).toBe(0);
    for (const name of ['batch', 'status', 'clone', 'completion', ...TOOL_COMMANDS.map((tool) => tool.name)]) {
      expect(String(help.stdout)).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
    }
    expect(String(help.stdout)).toContain('Exit codes');
    expect(String(help.stdout)).toMatch(/^ {2}75 +batch stopped on a quota refusal/m);
    const none = await prun([], { env: box.env });
    expect(none.exitCode).toBe(2);
    const unknown = await prun(['frobnicate'], { env: box.env });
    expect(unknown.exitCode).toBe(2);
    expect(String(unknown.stderr)).toBe('prun: unknown command: frobnicate (see prun --help)');
  });

  it.each([
    ['models', 'prun-model-resolve', ['gemini-3.8-flash-high', '--listing', '-', '--json'], 'gemini-3.8-flash-high\ngemini-3.9-flash-high\n'],
    ['models', 'prun-model-resolve', ['--listing'], ''],
    ['env', 'prun-env-scrub', ['--list', '--json'], ''],
    ['env', 'prun-env-scrub', ['--', 'sh', '-c', 'echo "$SAFE_NAME"; exit 7'], ''],
  ])('prun %s gives the same output and exit code as %s %j', async (command, bin, args, input) => {
    box = sandbox({ GEMINI_API_KEY: 'k', my_token: 't', SAFE_NAME: 'visible' });
    const viaPrun = await prun([command, ...args], { env: box.env, input });
    const direct = await execa(process.execPath, [binPath(bin), ...args], { env: box.env, extendEnv: false, reject: false, input });
    expect(viaPrun.exitCode).toBe(direct.exitCode);
    expect(viaPrun.stdout).toBe(direct.stdout);
    expect(viaPrun.stderr).toBe(direct.stderr);
  });

  it('passes each tool its own --help', async () => {
    box = sandbox();
    for (const tool of TOOL_COMMANDS) {
      const viaPrun = await prun([tool.name, '--help'], { env: box.env });
      const direct = await execa(process.execPath, [binPath(tool.bin), '--help'], { env: box.env, extendEnv: false, reject: false });
      expect(viaPrun.exitCode, tool.name).toBe(direct.exitCode);
      expect(viaPrun.stdout, tool.name).toBe(direct.stdout);
    }
  });
});

/**
 * The modules a prun command line loads: every bundle chunk it reads (tools/bundle-bin.mjs), as the
 * modules rolldown put in it (its `// dist/x.js` region comments), recorded by a preload that
 * watches fs.readFileSync, the one read that require and the code-cache loader make of a chunk.
 */
async function modulesLoadedBy(root: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | undefined; modules: string[] }> {
  const log = join(root, `loaded-${Math.random().toString(36).slice(2)}.log`);
  const record = join(root, 'record-chunks.cjs');
  writeFileSync(
    record,
    `const fs = require('node:fs');\nconst read = fs.readFileSync;\nfs.readFileSync = function (path, ...rest) {\n` +
      `  if (typeof path === 'string' && path.endsWith('.cjs')) fs.appendFileSync(${JSON.stringify(log)}, path + '\\n');\n` +
      `  return read.call(this, path, ...rest);\n};\n`,
  );
  const result = await prun(args, { env: { ...env, NODE_OPTIONS: `--require=${record}` } });
  const chunks = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
  const modules = chunks.flatMap((chunk) => [...readFileSync(chunk, 'utf8').matchAll(/^\/\/ ((?:\.\.\/)*[\w@./-]+\.js)$/gmu)].map((match) => match[1]!));
  return { code: result.exitCode, modules };
}

describe('what a prun command loads', () => {
  const driver = ['dist/batch.js', 'dist/open.js', 'dist/plan.js', 'dist/status.js', 'dist/live/commands.js'];
  it('help, completion and a mistake the declaration refuses load the declarations only: no batch code, no zod', async () => {
    box = sandbox();
    for (const args of [['help'], ['--help'], ['completion', 'bash'], ['batch', '--bogus', 'plan.json'], ['status']]) {
      const { code, modules } = await modulesLoadedBy(box.root, args, box.env);
      expect(code, args.join(' ')).toBe(args[0] === 'help' || args[0] === '--help' || args[0] === 'completion' ? 0 : 2);
      expect(modules, args.join(' ')).toContain('dist/cli.js');
      for (const module of driver) expect(modules, args.join(' ')).not.toContain(module);
      expect(modules.filter((module) => module.includes('/zod/')), args.join(' ')).toEqual([]);
    }
  });

  it('status, wait and a dry run off a terminal load no live panel', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [{ id: 'a', prompt: 'x' }]);
    const dir = join(box.root, 'fan');
    expect((await prun(['batch', plan, '--dir', dir, '--jobs', '1'], { env: box.env })).exitCode).toBe(0);
    for (const args of [['status', dir], ['wait', dir], ['batch', plan, '--dry-run']]) {
      const { code, modules } = await modulesLoadedBy(box.root, args, box.env);
      expect(code, args.join(' ')).toBe(0);
      expect(modules, args.join(' ')).toContain(args[0] === 'batch' ? 'dist/run/batch.js' : 'dist/status.js');
      expect(modules, args.join(' ')).not.toContain('dist/live/live-panel.js');
    }
  });

  it('a JSON plan batch and status load no node:module (on Node 20 it brings in the ES module loader); a YAML plan does, for its parser', async () => {
    box = sandbox();
    const log = join(box.root, 'builtins.log');
    const record = join(box.root, 'record-builtins.cjs');
    writeFileSync(record, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(log)}, process.moduleLoadList.join('\\n')));\n`);
    const loads = async (args: string[]): Promise<string[]> => {
      const result = await prun(args, { env: { ...box!.env, NODE_OPTIONS: `--require=${record}` } });
      expect(result.exitCode, args.join(' ')).toBe(0);
      return readFileSync(log, 'utf8').split('\n');
    };
    const json = writePlan(box.root, [{ id: 'a', prompt: 'x' }]);
    const dir = join(box.root, 'fan');
    for (const args of [['batch', json, '--dir', dir, '--jobs', '1'], ['status', dir]]) {
      const loaded = await loads(args);
      expect(loaded, args.join(' ')).toContain('NativeModule fs');
      expect(loaded, args.join(' ')).not.toContain('NativeModule module');
    }
    const yaml = join(box.root, 'plan.yaml');
    writeFileSync(yaml, 'units:\n  - id: y\n    prompt: from yaml\n');
    expect(await loads(['batch', yaml, '--dir', join(box.root, 'fan-yaml'), '--jobs', '1'])).toContain('NativeModule module');
  });

  it("holds a quota stop's exit code to the quota gate's own", () => {
    // errors.ts takes it from kit so that prun's command line loads no quota code.
    expect(EXIT.quota).toBe(QUOTA_EXHAUSTED_EXIT);
  });
});

describe('a directory that is not a batch', () => {
  it('is named the same way by every command that takes one', async () => {
    box = sandbox();
    const missing = join(box.root, 'nowhere');
    const empty = join(box.root, 'empty');
    mkdirSync(empty);
    const commands = (dir: string) => [['status', dir], ['status', dir, '--json'], ['log', dir, 'a'], ['cancel', dir, 'a'], ['clean', dir], ['batch', '--resume', dir], ['batch', '--retry-failed', dir]];
    for (const [dir, why] of [[missing, 'no such directory'], [empty, 'no plan.json']] as const) {
      for (const args of commands(dir)) {
        const refused = await prun(args, { env: box.env });
        expect(refused.exitCode, args.join(' ')).toBe(2);
        expect(String(refused.stderr), args.join(' ')).toBe(`prun: not a batch directory (${why}): ${dir}`);
      }
    }
  });

  it('is not said of a batch that lost its ledger: status and log show it, cancel and --resume refuse it as a damaged ledger (102)', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [{ id: 'a', prompt: 'x' }]);
    const dir = join(box.root, 'fan');
    expect((await prun(['batch', plan, '--dir', dir, '--jobs', '1'], { env: box.env })).exitCode).toBe(0);
    rmSync(join(dir, 'ledger.jsonl'));
    const status = await prun(['status', dir], { env: box.env });
    expect(status.exitCode).toBe(0);
    expect(String(status.stderr)).toContain('ledger.jsonl is missing');
    expect((await prun(['log', dir, 'a'], { env: box.env })).exitCode).toBe(0);
    for (const args of [['cancel', dir, 'a'], ['batch', '--resume', dir]]) {
      const refused = await prun(args, { env: box.env });
      expect(refused.exitCode, args.join(' ')).toBe(102);
      expect(String(refused.stderr), args.join(' ')).toContain('is missing but the batch has results or logs');
    }
  });
});

describe('prun clone', () => {
  it('makes a throwaway clone without a remote and refuses an existing directory', async () => {
    box = sandbox();
    const repo = join(box.root, 'repo');
    mkdirSync(repo);
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env: { ...box!.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } });
    git('init', '-q');
    writeFileSync(join(repo, 'file.txt'), 'content\n');
    git('add', '.');
    git('commit', '-qm', 'init');
    git('remote', 'add', 'origin', 'https://example.invalid/repo.git');

    const dest = join(box.root, 'clone');
    const made = await prun(['clone', repo, dest], { env: box.env });
    expect(made.exitCode).toBe(0);
    expect(made.stdout).toBe(dest);
    expect(readFileSync(join(dest, 'file.txt'), 'utf8')).toBe('content\n');
    expect(execFileSync('git', ['remote'], { cwd: dest }).toString()).toBe('');
    expect(execFileSync('git', ['config', 'core.longpaths'], { cwd: dest }).toString().trim()).toBe('true');

    const again = await prun(['clone', repo, dest], { env: box.env });
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toBe(`prun: clone destination already exists; use a fresh path: ${dest}`);
    const notRepo = await prun(['clone', join(box.root, 'home'), join(box.root, 'other')], { env: box.env });
    expect(notRepo.exitCode).toBe(1);
    expect(String(notRepo.stderr)).toMatch(/^prun: git clone failed: /);
    expect(existsSync(join(box.root, 'other'))).toBe(false);
  });
});

describe('prun completion', () => {
  it('prints a bash script that parses and completes commands and options', async () => {
    box = sandbox();
    const out = await prun(['completion', 'bash'], { env: box.env });
    expect(out.exitCode).toBe(0);
    const script = join(box.root, 'prun.bash');
    writeFileSync(script, String(out.stdout));
    expect(spawnSync('bash', ['-n', script]).status).toBe(0);
    const complete = (words: string) =>
      execFileSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _prun; printf '%s\\n' "\${COMPREPLY[@]}"`]).toString();
    expect(complete("prun ba").trim()).toBe('batch');
    expect(complete("prun batch --re").split('\n')).toEqual(expect.arrayContaining(['--resume', '--retry-failed']));
  });

  it('prints zsh and fish scripts naming every command, and refuses other shells', async () => {
    box = sandbox();
    for (const shell of ['zsh', 'fish']) {
      const out = await prun(['completion', shell], { env: box.env });
      expect(out.exitCode).toBe(0);
      for (const tool of TOOL_COMMANDS) expect(String(out.stdout)).toContain(tool.name);
      expect(String(out.stdout)).toContain('prun job __names');
    }
    const bad = await prun(['completion', 'tcsh'], { env: box.env });
    expect(bad.exitCode).toBe(2);
  });
});

describe('prun batch usage and status', () => {
  it('names the bad plan field and exits 2 before creating anything', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [{ id: 'a', prompt: 'x', depends_on: ['ghost'] }]);
    const dir = join(box.root, 'batch');
    const run = await prun(['batch', plan, '--dir', dir], { env: box.env });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe('prun: plan field units[0](id a).depends_on: unknown unit ghost');
    expect(existsSync(dir)).toBe(false);
    for (const args of [['batch'], ['batch', plan, '--jobs', '0'], ['batch', plan, '--resume', dir], ['batch', plan, '--bogus']]) {
      const bad = await prun(args, { env: box.env });
      expect(bad.exitCode, args.join(' ')).toBe(2);
      expect(String(bad.stderr)).toMatch(/^prun: /);
    }
    const badSetting = await prun(['batch', plan, '--dir', dir], { env: { ...box.env, PRUN_STALL_THRESHOLD: '10m' } });
    expect(badSetting.exitCode).toBe(2);
    expect(badSetting.stderr).toBe('prun: PRUN_STALL_THRESHOLD must be a non-negative integer number of seconds, got "10m"');
    expect(existsSync(dir)).toBe(false);
    const notBatch = await prun(['status', box.root], { env: box.env });
    expect(notBatch.exitCode).toBe(2);
  });

  it('refuses a batch directory that is not empty', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [{ id: 'a', prompt: 'x' }]);
    const dir = join(box.root, 'batch');
    mkdirSync(dir);
    writeFileSync(join(dir, 'mine.txt'), 'user data');
    const run = await prun(['batch', plan, '--dir', dir], { env: box.env });
    expect(run.exitCode).toBe(2);
    expect(readFileSync(join(dir, 'mine.txt'), 'utf8')).toBe('user data');
  });

  it('shows a hostile --dir name escaped in its plain stderr lines', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [{ id: 'a', prompt: 'UNIT-ID:a fine', model: 'fake-model-x' }]);
    // Relative, as typed: a name carrying a title-setting and a colour escape.
    const run = await prun(['batch', plan, '--dir', 'fan\u001b]0;pwn\u0007\u001b[31m'], { env: box.env, cwd: box.root });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const stderr = String(run.stderr);
    expect(stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(stderr).toContain('prun: batch directory ');
    expect(stderr).toContain('fan\\x1b]0;pwn\\x07\\x1b[31m');
  });

  it('reports a finished batch with prun status', async () => {
    box = sandbox();
    const plan = writePlan(box.root, [
      { id: 's1', prompt: 'UNIT-ID:s1 fine', model: 'fake-model-x' },
      { id: 's2', prompt: 'UNIT-ID:s2 [[agy EXIT=4]]', model: 'fake-model-x' },
    ]);
    const dir = join(box.root, 'batch');
    const run = await prun(['batch', plan, '--dir', dir], { env: box.env });
    expect(run.exitCode).toBe(1);
    expect(String(run.stdout)).toMatch(/^s2 +failed +4 +results\/s2\.md \(FALLBACK\) +Agy exited with code 4$/m);
    const status = await prun(['status', dir, '--json'], { env: box.env });
    expect(status.exitCode).toBe(0);
    const rows = JSON.parse(String(status.stdout)).units as Array<{ id: string; status: string; result: string; reason: string | null; exit_code: number }>;
    expect(rows.map((r) => [r.id, r.status, r.result, r.exit_code])).toEqual([
      ['s1', 'done', 'present', 0],
      ['s2', 'failed', 'fallback', 4],
    ]);
    expect(rows[1]!.reason).toBe('Agy exited with code 4');
    const text = await prun(['status', dir], { env: box.env });
    expect(String(text.stdout)).toMatch(/^UNIT +STATUS +EXIT +RESULT +DETAIL$/m);
  });
});
