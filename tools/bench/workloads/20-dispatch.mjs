// One dispatch against an instant fake agy (preflight on and off), and 20 dispatches started at
// once, beside the floor: starting the fake agy itself (once, and 20 times at once).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const title = 'prun-dispatch-agy: one unit and 20 at once, beside starting the fake agy';

function runProcess(file, args, { env, cwd, input = '' }) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, cwd, stdio: ['pipe', 'ignore', 'ignore'] });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited with ${code}`))));
    child.stdin.end(input);
  });
}

export async function run(ctx) {
  const fake = join(ctx.repoRoot, 'tools', 'fake-agy', 'fake-agy');
  const bin = join(ctx.repoRoot, 'packages', 'dispatcher-agy', 'bin', 'prun-dispatch-agy.js');
  const root = ctx.tempDir('prun-bench-dispatch-');
  const home = join(root, 'home');
  mkdirSync(home);
  const prompt = join(root, 'prompt.txt');
  writeFileSync(prompt, 'Audit section 3 and report evidence.\n');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    TMPDIR: root,
    ANTIGRAVITY_BIN: fake,
    // A missing caller-owned snapshot: no quota gate, and no refresh query in the measurement.
    AGY_QUOTA_CACHE: join(root, 'no-snapshot.json'),
  };
  let n = 0;
  const dispatchOnce = (preflight) => {
    n += 1;
    return runProcess(process.execPath, [bin, '--prompt-file', prompt, '--result-file', join(root, `r${n}.md`), '--unit-id', `u${n}`], {
      env: { ...env, ANTIGRAVITY_PREFLIGHT: preflight },
      cwd: root,
    });
  };
  const workerLine = '{"event": "user", "message": {"content": "x"}}\n';
  const fakeOnce = () =>
    runProcess(fake, ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high'], {
      env,
      cwd: root,
      input: workerLine,
    });
  const times = (count, fn) => () => Promise.all(Array.from({ length: count }, fn));

  ctx.report([
    { label: 'fake agy worker run (floor)', ms: await ctx.measure(fakeOnce) },
    { label: 'dispatch, preflight off', ms: await ctx.measure(() => dispatchOnce('off')) },
    { label: 'dispatch, preflight on', ms: await ctx.measure(() => dispatchOnce('auto')) },
  ]);
  process.stdout.write('\n');
  ctx.report([
    { label: '20 fake agy runs at once (floor)', ms: await ctx.measure(times(20, fakeOnce), { runs: 3 }) },
    { label: '20 dispatches at once, preflight on', ms: await ctx.measure(times(20, () => dispatchOnce('auto')), { runs: 3 }) },
  ]);
}
