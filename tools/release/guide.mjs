// Runs docs/user-guide.md as a reader would type it, and checks it shows what prun prints.
//
// Every ```sh block runs, in order, in one bash shell (errexit, pipefail), so exports and `cd`
// carry from one block to the next. The shell starts in a scratch directory outside the
// repository with a clean environment: a HOME of its own (which must still be empty at the
// end: trying prun never writes into the reader's home), TMPDIR in the scratch area, and npm
// pointed at the round trip's registry and a prefix of its own (so `npm i -g @prun/cli` in the
// guide installs what `pnpm release` published). A block whose first line is
// `# in the root of your prun checkout` starts in the checkout. A bare ``` block right after a
// sh block is that block's expected output (stdout and stderr together): runs of spaces count
// as one, `...` stands for any text within a line, and a line of just `...` for any lines.
// The checkout must be left as it was (git status unchanged).
//
// Used by tools/release/check.mjs after publishing; on its own:
//   node tools/release/guide.mjs --registry URL
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './workspace.mjs';

export const GUIDE = join(root, 'docs', 'user-guide.md');
const IN_CHECKOUT = /^#\s*in the root of your prun checkout\b/iu;
const GUIDE_TIMEOUT_MS = 10 * 60 * 1000;

/** The guide's sh blocks: `{ code, expected, line, inCheckout }`, expected null when none is shown. */
export function parseGuide(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^```\s*([\w-]*)\s*$/u.exec(lines[index]);
    if (!open) continue;
    const body = [];
    let close = index + 1;
    while (close < lines.length && !/^```\s*$/u.test(lines[close])) body.push(lines[close++]);
    blocks.push({ info: open[1], body, line: index + 1, end: close });
    index = close;
  }
  const runnable = [];
  blocks.forEach((block, position) => {
    if (block.info !== 'sh') return;
    const next = blocks[position + 1];
    const between = next ? lines.slice(block.end + 1, next.line - 1) : [];
    const shown = next && next.info === '' && between.every((line) => line.trim() === '');
    runnable.push({
      code: block.body.join('\n'),
      expected: shown ? next.body : null,
      line: block.line,
      inCheckout: IN_CHECKOUT.test(block.body[0] ?? ''),
    });
  });
  return runnable;
}

/**
 * `prun job steer NAME` lines whose job NAME was started with a prompt that does not hold it
 * at a `[[gate:...]]` (or `[[hang]]`): such a steer races the reply (a `[[slow]]` one ends in
 * about four seconds) and fails with "job is not running" on a slow machine.
 */
export function timedSteers(blocks) {
  const prompts = new Map();
  const racing = [];
  for (const block of blocks) {
    for (const line of block.code.split('\n')) {
      const started = /\bprun job run\b.*--name\s+(\S+)\s+(.*)$/u.exec(line);
      if (started) prompts.set(started[1], started[2]);
      const steer = /\bprun job steer\s+(\S+)/u.exec(line);
      if (steer && !/\[\[(gate:[A-Za-z0-9_-]+|hang)\]\]/u.test(prompts.get(steer[1]) ?? '')) racing.push(`docs/user-guide.md:${block.line}: ${line.trim()}`);
    }
  }
  return racing;
}

function normalise(line) {
  return line.replace(/\s+/gu, ' ').trim();
}

function linePattern(expected) {
  const parts = normalise(expected).split('...').map((part) => part.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 'u');
}

function trimBlankEnds(lines) {
  const out = [...lines];
  while (out.length > 0 && out.at(-1).trim() === '') out.pop();
  while (out.length > 0 && out[0].trim() === '') out.shift();
  return out;
}

/** True when the actual output lines are what the expected block shows. */
export function outputMatches(expectedLines, actualLines) {
  const expected = trimBlankEnds(expectedLines);
  const actual = trimBlankEnds(actualLines);
  const memo = new Map();
  const match = (e, a) => {
    const key = `${e},${a}`;
    if (memo.has(key)) return memo.get(key);
    let result;
    if (e === expected.length) result = a === actual.length;
    else if (expected[e].trim() === '...') result = match(e + 1, a) || (a < actual.length && match(e, a + 1));
    else result = a < actual.length && linePattern(expected[e]).test(normalise(actual[a])) && match(e + 1, a + 1);
    memo.set(key, result);
    return result;
  };
  return match(0, 0);
}

function gitStatus() {
  return spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: root, encoding: 'utf8' }).stdout;
}

function listTree(dir, base = dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    return entry.isDirectory() ? [full.slice(base.length + 1) + '/', ...listTree(full, base)] : [full.slice(base.length + 1)];
  });
}

/**
 * Runs the guide. `env` carries the npm settings (registry, cache, userconfig); the rest of
 * the shell's environment is built here. Resolves `{ results: [{ ok, label, detail }] }`.
 */
export async function runGuide({ registry, env = {}, work, guide = GUIDE }) {
  mkdirSync(work, { recursive: true });
  const scratch = join(work, 'scratch');
  const home = join(work, 'home');
  const temp = join(work, 'tmp');
  const outputs = join(work, 'outputs');
  const prefix = join(work, 'prefix');
  for (const dir of [scratch, home, temp, outputs, prefix]) mkdirSync(dir, { recursive: true });
  const blocks = parseGuide(readFileSync(guide, 'utf8'));
  const control = join(work, 'control');
  const racing = timedSteers(blocks);

  const script = ['set -eo pipefail', `exec 3>>${JSON.stringify(control)}`, `cd ${JSON.stringify(scratch)}`];
  blocks.forEach((block, index) => {
    script.push(`echo "start ${index}" >&3`);
    script.push(`{`);
    if (block.inCheckout) script.push(`cd ${JSON.stringify(root)}`);
    script.push(block.code);
    script.push(`} > ${JSON.stringify(join(outputs, String(index)))} 2>&1 < /dev/null`);
    script.push(`echo "end ${index}" >&3`);
  });
  writeFileSync(join(work, 'guide.sh'), `${script.join('\n')}\n`);
  writeFileSync(control, '');

  const shellEnv = {
    PATH: [join(prefix, 'bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: home,
    TMPDIR: temp,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    ...Object.fromEntries(Object.entries(env).filter(([key]) => /^npm_config_/iu.test(key))),
    npm_config_registry: registry,
    npm_config_prefix: prefix,
  };
  const before = gitStatus();
  const shell = spawn('bash', [join(work, 'guide.sh')], { cwd: scratch, env: shellEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  shell.stderr.on('data', (chunk) => (stderr += chunk));
  shell.stdout.resume();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    process.kill(-shell.pid, 'SIGKILL');
  }, GUIDE_TIMEOUT_MS);
  const code = await new Promise((done) => shell.on('close', (exitCode, signal) => done(exitCode ?? signal)));
  clearTimeout(timer);
  try {
    // Whatever the guide left running in its process group (a server whose kill never came).
    process.kill(-shell.pid, 'SIGTERM');
  } catch {
    // The group is already gone.
  }

  const markers = readFileSync(control, 'utf8').split('\n');
  const results = [{ ok: racing.length === 0, label: 'every job the guide steers is held at a [[gate:NAME]] while it is steered', detail: racing.join('\n') }];
  blocks.forEach((block, index) => {
    const label = `docs/user-guide.md:${block.line} ${block.code.split('\n').find((line) => line.trim() !== '' && !line.startsWith('#'))?.trim() ?? ''}`;
    if (!markers.includes(`start ${index}`)) return;
    const output = existsSync(join(outputs, String(index))) ? readFileSync(join(outputs, String(index)), 'utf8') : '';
    if (!markers.includes(`end ${index}`)) {
      results.push({ ok: false, label, detail: `${timedOut ? 'timed out' : `failed (shell exit ${code})`}; its output:\n${output}${stderr}` });
      return;
    }
    if (block.expected === null) {
      results.push({ ok: true, label });
      return;
    }
    const same = outputMatches(block.expected, output.split('\n'));
    results.push({ ok: same, label: `${label} prints what the guide shows`, detail: `the guide shows:\n${block.expected.join('\n')}\nit printed:\n${output}` });
  });
  const ran = results.length;
  results.push({ ok: ran === blocks.length, label: `every sh block ran (${ran} of ${blocks.length})`, detail: stderr });
  const written = listTree(home);
  results.push({ ok: written.length === 0, label: 'the guide wrote nothing into the reader\'s HOME', detail: written.join('\n') });
  const after = gitStatus();
  results.push({ ok: after === before, label: 'the guide left the checkout as it was', detail: `git status before:\n${before}\nafter:\n${after}` });
  return { results };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const at = process.argv.indexOf('--registry');
  const registry = at > 0 ? process.argv[at + 1] : undefined;
  if (!registry) {
    process.stderr.write('usage: node tools/release/guide.mjs --registry URL (pnpm release:check starts one and runs this)\n');
    process.exit(2);
  }
  const work = mkdtempSync(join(tmpdir(), 'prun-guide-'));
  const env = { npm_config_cache: join(work, 'npm-cache'), npm_config_userconfig: join(work, 'npmrc') };
  writeFileSync(env.npm_config_userconfig, '');
  const { results } = await runGuide({ registry, env, work: join(work, 'guide') });
  for (const result of results) {
    process.stdout.write(`${result.ok ? 'ok  ' : 'FAIL'} ${result.label}\n`);
    if (!result.ok && result.detail) process.stdout.write(`${result.detail.replace(/^/gmu, '     ')}\n`);
  }
  rmSync(work, { recursive: true, force: true });
  process.exitCode = results.every((result) => result.ok) ? 0 : 1;
}
