// One dispatch against an instant fake agy (`--mode plan`, preflight off and on), and 20
// dispatches started at once, beside the floor (starting the fake agy itself: once, three times
// in a row as a dispatch with preflight does, and 20 times at once) and, when
// PRUN_BENCH_ORIGINALS names a folder holding the original `dispatch-task-agy.py`, beside the
// original on the same workload. Without it the original's figures recorded in issue #15 (another
// sitting, another load, another fake agy) are printed for reference, with what they can and
// cannot be compared with.
//
// PRUN_BENCH_DISPATCH_BASE=<another checkout> (for example /work/main, built) adds that build's
// prun-dispatch-agy to every table, interleaved with this one's, and prints both own costs: an
// A/B in one sitting, under the same load.
//
// The dispatcher's own cost is a dispatch minus its matching floor: with preflight off the one
// fake agy worker run, with preflight on the three fake agy runs a preflight needs. That is what
// the dispatcher (its Node start, the isolation probe, the launch chain, the state directory and
// publication) adds to the agy processes it must start anyway.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { originalsDir, runProcess } from '../lib.mjs';

export const title = 'prun-dispatch-agy: one unit and 20 at once, beside starting the fake agy (and the original dispatcher)';

/** Issue #15's measurement of the original with fake agy `--mode plan`: one dispatch (wall, peak RSS), and 20 at once (wall). */
const RECORDED_ORIGINAL = { oneMs: 51, oneMiB: 20, twentyMs: [640, 710] };

/** How many dispatches the "at once" table starts together. */
const AT_ONCE = 20;

function originalScript() {
  const folder = originalsDir();
  if (!folder) return null;
  for (const name of ['dispatch-task-agy.py', 'dispatch_task_agy.py']) {
    const path = join(folder, name);
    if (existsSync(path)) return path;
  }
  return null;
}

/** `sh -c` text that starts every command line at once and waits for all (each must exit 0). */
function allAtOnce(lines) {
  const starts = lines.map((line) => `(${line}) >/dev/null 2>&1 & pids="$pids $!"`).join('\n');
  return `pids=\n${starts}\nstatus=0\nfor pid in $pids; do wait "$pid" || status=1; done\nexit $status\n`;
}

/** A word for `sh`, single-quoted. */
const quote = (word) => `'${String(word).replaceAll("'", "'\\''")}'`;

const ms = (value) => `${value >= 0 ? '+' : '-'}${Math.abs(value).toFixed(1)} ms`;

/** "own cost" of `row` over `floor`: wall and CPU differences (CPU n/a without GNU time). */
function ownCost(row, floor) {
  const cpu = row.cpuMs !== null && floor.cpuMs !== null ? row.cpuMs - floor.cpuMs : null;
  return { wall: row.ms - floor.ms, cpu };
}

function ownText({ wall, cpu }) {
  return `${ms(wall)} wall, ${cpu === null ? 'n/a' : ms(cpu)} CPU`;
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
  const tools = [{ name: 'prun-dispatch-agy', file: process.execPath, prefix: [bin] }];
  if (original) tools.push({ name: 'original dispatch-task-agy.py', file: 'python3', prefix: [original] });
  const baseRoot = process.env.PRUN_BENCH_DISPATCH_BASE;
  const BASE = 'prun-dispatch-agy (base build)';
  if (baseRoot) tools.push({ name: BASE, file: process.execPath, prefix: [join(baseRoot, 'packages', 'dispatcher-agy', 'bin', 'prun-dispatch-agy.js')] });
  const workerLine = '{"event": "user", "message": {"content": "x"}}';
  const fakeArgs = ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high'];
  const fakeWorkerLine = `printf '%s\\n' ${quote(workerLine)} | ${[fake, ...fakeArgs].map(quote).join(' ')}`;
  // What a dispatch with preflight starts of agy: --version, models, then the worker.
  const fakeThreeLine = `${quote(fake)} --version && ${quote(fake)} models && ${fakeWorkerLine}`;
  const dispatchLine = (tool, preflight) =>
    `ANTIGRAVITY_PREFLIGHT=${preflight} ${[tool.file, ...tool.prefix, ...dispatchArgs()].map(quote).join(' ')}`;
  const sh = (script) => runProcess('sh', ['-c', script], { env, cwd: root });

  // Load average at the end of each table: it matters on a shared machine.
  const loadNote = () =>
    `Every process runs with the same small environment (no NODE_EXTRA_CA_CERTS). Load average at the end: ${loadavg()[0].toFixed(1)}.`;

  // One dispatch.
  const cases = [
    { label: 'fake agy worker run (floor)', run: () => sh(fakeWorkerLine) },
    { label: 'fake agy --version, models, worker run (preflight floor)', run: () => sh(fakeThreeLine) },
  ];
  for (const tool of tools) {
    for (const preflight of ['off', 'auto']) {
      cases.push({ label: `${tool.name}, preflight ${preflight === 'off' ? 'off' : 'on'}`, run: () => sh(dispatchLine(tool, preflight)) });
    }
  }
  // More rounds for a steadier A/B on a loaded machine: PRUN_BENCH_DISPATCH_RUNS (default 7).
  const runs = Number.parseInt(process.env.PRUN_BENCH_DISPATCH_RUNS ?? '', 10) || 7;
  const rows = await ctx.compare(cases, { runs, warmup: 1 });
  const row = (label) => rows.find((r) => r.label === label);
  const floors = { off: rows[0], on: rows[1] };
  const ours = { off: row('prun-dispatch-agy, preflight off'), on: row('prun-dispatch-agy, preflight on') };
  const own = { off: ownCost(ours.off, floors.off), on: ownCost(ours.on, floors.on) };
  const ownNote =
    `The dispatcher's own cost (a dispatch minus its matching floor: the worker run with preflight off, the three fake agy runs with it on): ` +
    `preflight off ${ownText(own.off)}, on ${ownText(own.on)}. ` +
    `The preflight floor starts the three in a row while the dispatcher runs --version and models at once, so with preflight on ` +
    `the wall difference also holds that overlap (it can be smaller than with preflight off); the CPU difference is like for like. ` +
    `CPU times come from GNU time, in steps of 10 ms.`;
  const lines = [];
  if (original) {
    const theirs = { off: row('original dispatch-task-agy.py, preflight off'), on: row('original dispatch-task-agy.py, preflight on') };
    for (const which of ['off', 'on']) {
      const cpu = ours[which].cpuMs && theirs[which].cpuMs ? `×${(ours[which].cpuMs / theirs[which].cpuMs).toFixed(2)}` : 'n/a';
      const theirsOwn = ownCost(theirs[which], floors[which]);
      lines.push(
        `preflight ${which}: ×${(ours[which].ms / theirs[which].ms).toFixed(2)} wall, ${cpu} CPU` +
          ` (own cost: ours ${ownText(own[which])}, the original's ${ownText(theirsOwn)})`,
      );
    }
  }
  const recordedOne =
    `Issue #15 recorded the original at ${RECORDED_ORIGINAL.oneMs} ms and ${RECORDED_ORIGINAL.oneMiB} MiB for one dispatch (another sitting). ` +
    `That total cannot have come from this fake agy: one fake agy run alone is a Node start, ${floors.off.ms.toFixed(0)} ms and ` +
    `${floors.off.rssMiB === null ? 'about 40' : floors.off.rssMiB.toFixed(0)} MiB here, so the recorded figure includes a far cheaper stand-in for agy ` +
    `and says nothing about it separately. What it does bound is the original's own cost (at most ${RECORDED_ORIGINAL.oneMs} ms, its Python start included), ` +
    `the number to set beside ours: preflight off ×${(own.off.wall / RECORDED_ORIGINAL.oneMs).toFixed(2)} of it, on ×${(own.on.wall / RECORDED_ORIGINAL.oneMs).toFixed(2)} (wall). ` +
    `The whole dispatch against the recorded total (off ×${(ours.off.ms / RECORDED_ORIGINAL.oneMs).toFixed(2)}, on ×${(ours.on.ms / RECORDED_ORIGINAL.oneMs).toFixed(2)}) ` +
    `mostly measures the difference between the two fake agys.`;
  ctx.table(rows, {
    readme: 'dispatcher-agy',
    title: 'One dispatch (fake agy, `--mode plan`)',
    note: `${loadNote()} ${ownNote} ${original ? `Against the original measured here: ${lines.join('; ')}.` : recordedOne}`,
  });
  process.stdout.write(`  own cost: preflight off ${ownText(own.off)}; preflight on ${ownText(own.on)} (each over its floor)\n`);
  if (baseRoot) {
    const base = { off: ownCost(row(`${BASE}, preflight off`), floors.off), on: ownCost(row(`${BASE}, preflight on`), floors.on) };
    process.stdout.write(`  base build (${baseRoot}) own cost: preflight off ${ownText(base.off)}; preflight on ${ownText(base.on)}\n`);
  }
  if (original) {
    process.stdout.write(`  one dispatch vs the original (goal ≤ ×1.5): ${lines.join('; ')}\n`);
  } else {
    process.stdout.write(`  no dispatch-task-agy.py in PRUN_BENCH_ORIGINALS (${originalsDir() ?? 'unset'}). ${recordedOne}\n`);
  }
  process.stdout.write('\n');

  // 20 at once: one `sh` starts them all and waits, so wall time runs from the first start to the
  // last end and the CPU time (GNU time, of every process) is the whole batch's.
  const times = (line) => () => sh(allAtOnce(Array.from({ length: AT_ONCE }, line)));
  const at20Cases = [
    { label: `${AT_ONCE} fake agy runs at once (floor)`, run: times(() => fakeWorkerLine) },
    { label: `${AT_ONCE} × (fake agy --version, models, worker run) at once (preflight floor)`, run: times(() => fakeThreeLine) },
  ];
  for (const tool of tools) at20Cases.push({ label: `${AT_ONCE} × ${tool.name} at once, preflight on`, run: times(() => dispatchLine(tool, 'auto')) });
  const at20 = await ctx.compare(at20Cases, { runs: 3, warmup: 1 });
  const ours20 = at20[2];
  const own20 = ownCost(ours20, at20[1]);
  const [low, high] = RECORDED_ORIGINAL.twentyMs;
  const recorded20 =
    `Issue #15 recorded the original at ${low}-${high} ms for ${AT_ONCE} at once (another sitting, its own cheaper fake agy): ` +
    `the whole batch here is ×${(ours20.ms / high).toFixed(2)}-×${(ours20.ms / low).toFixed(2)} of it, and the dispatchers' own share ` +
    `(${ms(own20.wall)} over the preflight floor) ×${(own20.wall / high).toFixed(2)}-×${(own20.wall / low).toFixed(2)}.`;
  let vsOriginal20 = '';
  if (original) {
    const theirs20 = at20[3];
    const cpu = ours20.cpuMs && theirs20.cpuMs ? `×${(ours20.cpuMs / theirs20.cpuMs).toFixed(2)}` : 'n/a';
    vsOriginal20 = `×${(ours20.ms / theirs20.ms).toFixed(2)} wall, ${cpu} CPU (own cost: ours ${ownText(own20)}, the original's ${ownText(ownCost(theirs20, at20[1]))})`;
  }
  ctx.table(at20, {
    readme: 'dispatcher-agy',
    title: `${AT_ONCE} dispatches at once (preflight on; CPU of all their processes)`,
    note:
      `${loadNote()} The dispatchers' own cost (the batch minus its preflight floor): ${ownText(own20)}, ` +
      `×${(own20.wall / at20[1].ms).toFixed(2)} of the floor's wall. ${original ? `Against the original measured here: ${vsOriginal20}.` : recorded20}`,
  });
  process.stdout.write(`  ${AT_ONCE} at once: ×${(ours20.ms / at20[1].ms).toFixed(2)} of the preflight floor; own cost ${ownText(own20)} over it\n`);
  // The recorded figure stands in only when the original was not measured here.
  process.stdout.write(original ? `  ${AT_ONCE} at once vs the original (goal ≤ ×1.5): ${vsOriginal20}\n` : `  ${recorded20}\n`);
  if (baseRoot) {
    const base20 = at20.find((r) => r.label === `${AT_ONCE} × ${BASE} at once, preflight on`);
    process.stdout.write(`  ${AT_ONCE} at once, base build (${baseRoot}): own cost ${ownText(ownCost(base20, at20[1]))}\n`);
  }
}
