// One dispatch against an instant fake agy (`--mode plan`, preflight off and on), and 20
// dispatches started at once, beside the floor (starting the fake agy itself: once, three times
// in a row as a dispatch with preflight does, and 20 times at once) and, when
// PRUN_BENCH_ORIGINALS names a folder holding the original `dispatch-task-agy.py`, beside the
// original on the same workload. Without it the original's figures recorded in issue #15 (another
// sitting, another load) are printed for reference.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { originalsDir, runProcess } from '../lib.mjs';

export const title = 'prun-dispatch-agy: one unit and 20 at once, beside starting the fake agy (and the original dispatcher)';

/** Issue #15's measurement of the original with fake agy `--mode plan`: one dispatch, and 20 at once (wall). */
const RECORDED_ORIGINAL = { oneMs: 51, twentyMs: [640, 710] };

function originalScript() {
  const folder = originalsDir();
  if (!folder) return null;
  for (const name of ['dispatch-task-agy.py', 'dispatch_task_agy.py']) {
    const path = join(folder, name);
    if (existsSync(path)) return path;
  }
  return null;
}

function runAsync(file, args, { env, cwd, input = '' }) {
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
  const original = originalScript();
  const root = ctx.tempDir('prun-bench-dispatch-');
  const home = join(root, 'home');
  mkdirSync(home);
  const prompt = join(root, 'prompt.txt');
  writeFileSync(prompt, 'Audit section 3 and report evidence.\n');
  // Both sides get the same small environment: no NODE_EXTRA_CA_CERTS (Node would load those
  // certificates at every start of the dispatcher and of each fake agy), as on most machines.
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    TMPDIR: root,
    ANTIGRAVITY_BIN: fake,
    // A missing caller-owned snapshot: no quota gate, and no refresh query in the measurement.
    AGY_QUOTA_CACHE: join(root, 'no-snapshot.json'),
  };
  let n = 0;
  const dispatchArgs = () => {
    n += 1;
    return ['--prompt-file', prompt, '--result-file', join(root, `r${n}.md`), '--unit-id', `u${n}`, '--mode', 'plan'];
  };
  const tools = [['prun-dispatch-agy', process.execPath, [bin]]];
  if (original) tools.push(['original dispatch-task-agy.py', 'python3', [original]]);
  const workerLine = '{"event": "user", "message": {"content": "x"}}\n';
  const fakeArgs = ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high'];
  const fakeWorker = () => runProcess('sh', ['-c', `printf '%s\\n' '${workerLine.trim()}' | "$0" "$@"`, fake, ...fakeArgs], { env, cwd: root });
  const fakeThree = () =>
    runProcess('sh', ['-c', `"$0" --version && "$0" models && printf '%s\\n' '${workerLine.trim()}' | "$0" "$@"`, fake, ...fakeArgs], {
      env,
      cwd: root,
    });

  const cases = [
    { label: 'fake agy worker run (floor)', run: fakeWorker },
    { label: 'fake agy --version, models, worker run (preflight floor)', run: fakeThree },
  ];
  for (const [name, file, prefix] of tools) {
    for (const preflight of ['off', 'auto']) {
      cases.push({
        label: `${name}, preflight ${preflight === 'off' ? 'off' : 'on'}`,
        run: () => runProcess(file, [...prefix, ...dispatchArgs()], { env: { ...env, ANTIGRAVITY_PREFLIGHT: preflight }, cwd: root }),
      });
    }
  }
  // The machine line names NODE_EXTRA_CA_CERTS when the bench itself has it; the processes
  // measured here never do. The load matters on a shared machine: it is recorded with the table.
  const note = () =>
    `Every process runs with the same small environment (no NODE_EXTRA_CA_CERTS). Load average at the end: ${loadavg()[0].toFixed(1)}.` +
    (original ? '' : ' The original dispatcher was not measured (no PRUN_BENCH_ORIGINALS); issue #15 recorded it at 51 ms for one dispatch and 0.64-0.71 s for 20 at once.');
  const rows = await ctx.compare(cases, { runs: 7, warmup: 1 });
  ctx.table(rows, { readme: 'dispatcher-agy', title: 'One dispatch (fake agy, `--mode plan`)', note: note() });
  const row = (label) => rows.find((r) => r.label === label);
  const ratios = [];
  const ours = { off: row('prun-dispatch-agy, preflight off'), on: row('prun-dispatch-agy, preflight on') };
  if (original) {
    for (const which of ['off', 'on']) {
      const theirs = row(`original dispatch-task-agy.py, preflight ${which}`);
      ratios.push(`preflight ${which}: ×${(ours[which].ms / theirs.ms).toFixed(2)} wall, ×${ours[which].cpuMs && theirs.cpuMs ? (ours[which].cpuMs / theirs.cpuMs).toFixed(2) : 'n/a'} CPU`);
    }
    process.stdout.write(`  one dispatch vs the original (goal ≤ ×1.5): ${ratios.join('; ')}\n`);
  } else {
    process.stdout.write(
      `  no dispatch-task-agy.py in PRUN_BENCH_ORIGINALS (${originalsDir() ?? 'unset'}); ` +
        `recorded original (#15, other sitting): ${RECORDED_ORIGINAL.oneMs} ms, so preflight on is ×${(ours.on.ms / RECORDED_ORIGINAL.oneMs).toFixed(2)} of it, off ×${(ours.off.ms / RECORDED_ORIGINAL.oneMs).toFixed(2)}\n`,
    );
  }
  process.stdout.write('\n');

  // 20 at once: wall time from the first start to the last end.
  const times = (count, fn) => () => Promise.all(Array.from({ length: count }, fn));
  const fakeAsync = () => runAsync(fake, fakeArgs, { env, cwd: root, input: workerLine });
  // What a dispatch with preflight starts of agy: --version, models, then the worker, in a row.
  const fakeThreeAsync = async () => {
    await runAsync(fake, ['--version'], { env, cwd: root });
    await runAsync(fake, ['models'], { env, cwd: root });
    await fakeAsync();
  };
  const at20 = [
    { label: '20 fake agy runs at once (floor)', ms: await ctx.measure(times(20, fakeAsync), { runs: 3 }) },
    { label: '20 × (fake agy --version, models, worker run) at once (preflight floor)', ms: await ctx.measure(times(20, fakeThreeAsync), { runs: 3 }) },
  ];
  for (const [name, file, prefix] of tools) {
    const once = () => runAsync(file, [...prefix, ...dispatchArgs()], { env: { ...env, ANTIGRAVITY_PREFLIGHT: 'auto' }, cwd: root });
    at20.push({ label: `20 × ${name} at once, preflight on`, ms: await ctx.measure(times(20, once), { runs: 3 }) });
  }
  ctx.report(at20);
  ctx.record('dispatcher-agy', { title: '20 dispatches at once (wall, preflight on)', rows: at20, note: note() });
  const ours20 = at20[2].ms;
  process.stdout.write(`  20 at once vs its preflight floor: ×${(ours20 / at20[1].ms).toFixed(2)}\n`);
  if (original) {
    process.stdout.write(`  20 at once vs the original (goal ≤ ×1.5): ×${(ours20 / at20[3].ms).toFixed(2)}\n`);
  } else {
    const [low, high] = RECORDED_ORIGINAL.twentyMs;
    process.stdout.write(`  recorded original (#15, other sitting): ${low}-${high} ms, so ×${(ours20 / high).toFixed(2)}-×${(ours20 / low).toFixed(2)} of it\n`);
  }
}
