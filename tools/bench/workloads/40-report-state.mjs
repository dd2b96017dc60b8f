// prun-report-state over 10,000 units beside a bare walk that makes the same system calls
// (a typed readdir, the result-file read as report-state reads it, a stat of the target and of
// the tail; a unit's own stat only when the listing shows a symlink) with nothing else: the goal is at most 1.6 times that walk, and at
// most the original Python tool (measured when PRUN_BENCH_ORIGINALS, or PRUN_ORIGINALS, names a folder holding
// prun_state.py, otherwise against the ratio recorded for it in issue #15).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as lib from '../lib.mjs';

const UNITS = Number(process.env.PRUN_BENCH_REPORT_UNITS ?? 10_000);
const SMALL = Math.max(1, Math.round(UNITS / 10));
const STARTS_PER_SAMPLE = 10;

export const title = `report-state over ${UNITS.toLocaleString('en')} units beside a bare walk doing the same stats and reads`;

// Recorded in issue #15 on its 2-core machine: the original took 0.267 s over 10,000 units,
// and a bare Node walk 19 µs a unit after Node's start. The issue gives that start as 0.045 s
// with NODE_EXTRA_CA_CERTS set and 0.017 s with it unset, and asks for both sides to be
// measured the same way. Every row here runs with it unset, the walk included, and the
// original (Python) never reads it, so on these terms the walk took 0.017 + 0.19 = 0.207 s and
// the original ran at about 1.29 times it; that ratio stands in for the original here. (An
// earlier version divided by the walk with the 0.045 s start, ×1.14: a stricter bar than the
// original's own time on these terms. The note prints the verdict by both.)
const RECORDED_ORIGINAL_VS_WALK = 0.267 / (0.017 + 10_000 * 19e-6);
const RECORDED_ORIGINAL_VS_WALK_CA_SET = 0.267 / (0.045 + 10_000 * 19e-6);

// The same corpus shape an interrupted fan-out leaves: most units resolved, some results
// missing or empty, some without a result-file entry.
function buildCorpus(root, units) {
  const results = join(root, 'results');
  mkdirSync(results, { recursive: true });
  const tail = 'x'.repeat(512);
  for (let i = 0; i < units; i += 1) {
    const unit = join(root, `prun-task-0123abcd-unit_${i}-4242-${String(i).padStart(16, '0')}`);
    mkdirSync(unit);
    writeFileSync(join(unit, 'tail'), tail);
    if (i % 10 === 9) continue;
    const result = join(results, `unit_${i}.md`);
    writeFileSync(join(unit, 'result-file'), `${result}\n`);
    if (i % 10 < 6) writeFileSync(result, `# unit_${i} result\n`);
    else if (i % 10 === 6) writeFileSync(result, '');
  }
}

// The floor: exactly report-state's system calls, written as plainly as Node allows. It lists the
// root with d_type (readdir withFileTypes; a symlink, and only a symlink, is stat'ed to follow it),
// keeps the prun-task-* names and sorts them; per unit it stats `result-file`, and when that is a
// regular file opens it (O_RDONLY | O_NONBLOCK | O_NOCTTY), fstats it, reads it into one reused
// buffer until end of file, closes it and stats the path it names; then it stats `tail` and adds
// its size. Stats that do not throw, no records, and one line of output. `strace -c` counts the
// same statx, openat, read/pread64 and close calls as report-state's sweep. It starts as our bin
// does, from a CommonJS file (not `node -e`), run by the same node with the same environment.
const BARE_WALK = `
const fs = require('node:fs');
const root = process.argv[2];
const buffer = Buffer.allocUnsafe(65537);
const flags = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;
let units = 0, bytes = 0;
const listed = fs.readdirSync(root, { withFileTypes: true }).filter((d) => d.name.startsWith('prun-task-'));
for (const dirent of listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
  const unit = root + '/' + dirent.name;
  if (dirent.isSymbolicLink() ? !fs.statSync(unit).isDirectory() : !dirent.isDirectory()) continue;
  units += 1;
  const entry = unit + '/result-file';
  const stats = fs.statSync(entry, { throwIfNoEntry: false });
  if (stats && stats.isFile()) {
    const fd = fs.openSync(entry, flags);
    fs.fstatSync(fd);
    let length = 0, n;
    while ((n = fs.readSync(fd, buffer, length, buffer.length - length, null)) > 0) length += n;
    fs.closeSync(fd);
    const target = buffer.toString('utf8', 0, length).trim();
    if (target) fs.statSync(target, { throwIfNoEntry: false });
  }
  const tail = fs.statSync(unit + '/tail', { throwIfNoEntry: false });
  if (tail) bytes += tail.size;
}
process.stdout.write(units + ' ' + bytes + '\\n');
`;

function originalScript() {
  const folder = lib.originalsDir();
  if (!folder) return null;
  const script = join(folder, 'prun_state.py');
  if (existsSync(script)) return script;
  process.stdout.write(`  prun_state.py not found in ${folder}: comparing with the ratio recorded in issue #15\n`);
  return null;
}

export async function run(ctx) {
  if (typeof ctx.compare !== 'function' || typeof lib.runProcess !== 'function') {
    throw new Error('needs the interleaved CPU/RSS helpers of tools/bench/lib.mjs (ctx.compare, runProcess)');
  }
  const { runProcess } = lib;
  const root = ctx.tempDir('prun-bench-report-');
  const small = ctx.tempDir('prun-bench-report-small-');
  const empty = ctx.tempDir('prun-bench-report-empty-');
  buildCorpus(root, UNITS);
  buildCorpus(small, SMALL);
  const bin = join(ctx.repoRoot, 'packages', 'report-state', 'bin', 'prun-report-state.cjs');
  const node = process.execPath;
  const walkScript = join(ctx.tempDir('prun-bench-walk-'), 'walk.cjs');
  writeFileSync(walkScript, `'use strict';\n${BARE_WALK}`);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  // Every row runs with only PATH set: NODE_EXTRA_CA_CERTS (which every Node start would read) unset
  // on both sides, as on most machines. Exit 1 (a partial sweep) is still a full sweep.
  const report = (dir, ...args) => () => runProcess(node, [bin, '--root', dir, ...args], { env, okCodes: [0, 1] });
  const original = originalScript();
  const cases = [
    { label: 'bare walk, same stats and reads (floor)', run: () => runProcess(node, [walkScript, root], { env }) },
    { label: 'prun-report-state --json --summary', run: report(root, '--json', '--summary') },
    { label: 'prun-report-state (text) --summary', run: report(root, '--summary') },
    { label: 'prun-report-state --json --sort tail-bytes-desc', run: report(root, '--json', '--sort', 'tail-bytes-desc') },
  ];
  if (original) {
    cases.push({
      label: 'original: prun_state.py report-state --json --summary',
      run: () => runProcess('python3', [original, 'report-state', '--root', root, '--json', '--summary'], { env, okCodes: [0, 1] }),
    });
  }
  // Nine rounds: on a loaded 2-core machine five medians swing by a tenth and more. Each round
  // runs every case once, back to back; besides the medians of each case (the table), the
  // median over rounds of each round's own ratio to the walk is printed: a load spike that hits
  // one round moves that round's ratio, not the result.
  const rounds = [];
  for (let round = 0; round < 9; round += 1) rounds.push(await ctx.compare(cases, { runs: 1, warmup: round === 0 ? 1 : 0 }));
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const rows = cases.map((item, index) => ({
    label: item.label,
    ms: median(rounds.map((r) => r[index].ms)),
    cpuMs: rounds[0][index].cpuMs === null ? null : median(rounds.map((r) => r[index].cpuMs)),
    rssMiB: rounds[0][index].rssMiB === null ? null : median(rounds.map((r) => r[index].rssMiB)),
  }));
  const roundRatio = (index, key) => (rounds[0][index][key] === null ? null : median(rounds.map((r) => r[index][key] / r[0][key])));
  const byRound = cases
    .slice(1)
    .map((item, i) => `${item.label}: ×${roundRatio(i + 1, 'ms').toFixed(2)} wall, ${roundRatio(i + 1, 'cpuMs') === null ? 'n/a' : `×${roundRatio(i + 1, 'cpuMs').toFixed(2)}`} CPU`)
    .join('; ');
  const walk = rows[0];
  const prun = rows[1];
  const cpuNote = walk.cpuMs && prun.cpuMs ? ` CPU time: ×${(prun.cpuMs / walk.cpuMs).toFixed(2)} the bare walk.` : '';
  const originalRow = rows.find((row) => row.label.startsWith('original'));
  const vsOriginal = originalRow
    ? `×${(prun.ms / originalRow.ms).toFixed(2)} the original (measured)`
    : `×${(prun.ms / walk.ms / RECORDED_ORIGINAL_VS_WALK).toFixed(2)} the original (recorded: the original ran at ×${RECORDED_ORIGINAL_VS_WALK.toFixed(2)} the bare walk with NODE_EXTRA_CA_CERTS unset; ×${(prun.ms / walk.ms / RECORDED_ORIGINAL_VS_WALK_CA_SET).toFixed(2)} by the stricter ×${RECORDED_ORIGINAL_VS_WALK_CA_SET.toFixed(2)}, the walk's start as the issue measured it with the variable set)`;
  const cpuVsOriginal = originalRow
    ? `×${(prun.cpuMs / originalRow.cpuMs).toFixed(2)} the original (measured)`
    : `×${(prun.cpuMs / walk.cpuMs / RECORDED_ORIGINAL_VS_WALK).toFixed(2)} the original (estimated from the ratio recorded in issue #15: the original ran at ×${RECORDED_ORIGINAL_VS_WALK.toFixed(2)} the bare walk; ×${(prun.cpuMs / walk.cpuMs / RECORDED_ORIGINAL_VS_WALK_CA_SET).toFixed(2)} by the stricter ×${RECORDED_ORIGINAL_VS_WALK_CA_SET.toFixed(2)})`;
  ctx.table(rows, {
    readme: 'report-state',
    title: `${UNITS.toLocaleString('en')} units`,
    note: `\`--json --summary\`: by CPU time ${cpuVsOriginal}; by wall time ${vsOriginal}. Goals: ≤ ×1.6 the bare walk, ≤ ×1.0 the original. Every row ran with NODE_EXTRA_CA_CERTS unset. CPU time is the steadier number on a loaded machine. The median over the ${rounds.length} rounds of each round's own ratio to the walk: ${byRound}.`,
  });
  process.stdout.write(`  median of per-round ratios to the walk: ${byRound}\n`);
  process.stdout.write(
    `  --json --summary: x${(prun.ms / walk.ms).toFixed(2)} the bare walk (goal <= 1.6), ${vsOriginal} (goal <= 1.0)${cpuNote ? `;${cpuNote}` : ''}` +
      `${prun.cpuMs ? ` By CPU time ${cpuVsOriginal}.` : ''}\n\n`,
  );

  // Per unit, start-up taken out: the slope between 1/10 of the units and all of them.
  const perUnit = await ctx.compare(
    [
      { label: `bare walk, ${SMALL} units`, run: () => runProcess(node, [walkScript, small], { env }) },
      { label: `bare walk, ${UNITS} units`, run: () => runProcess(node, [walkScript, root], { env }) },
      { label: `report-state --json --summary, ${SMALL} units`, run: report(small, '--json', '--summary') },
      { label: `report-state --json --summary, ${UNITS} units`, run: report(root, '--json', '--summary') },
    ],
    { runs: 9, warmup: 1 },
  );
  const slope = (a, b, key) => (perUnit[b][key] - perUnit[a][key]) / (UNITS - SMALL);
  const rowsPerUnit = [
    { label: 'bare walk, per unit (floor)', ms: slope(0, 1, 'ms') * 1000, cpuMs: walk.cpuMs === null ? null : slope(0, 1, 'cpuMs') * 1000, rssMiB: null },
    { label: 'report-state --json --summary, per unit', ms: slope(2, 3, 'ms') * 1000, cpuMs: walk.cpuMs === null ? null : slope(2, 3, 'cpuMs') * 1000, rssMiB: null },
  ];
  process.stdout.write('  per unit (µs, the slope between the two corpus sizes; "ms" columns read µs):\n');
  ctx.table(rowsPerUnit, {
    readme: 'report-state',
    title: 'per unit (start-up taken out)',
    note: `The slope between ${SMALL.toLocaleString('en')} and ${UNITS.toLocaleString('en')} units.`,
  });
  // Start-up: the same runs over a root with no unit. GNU time counts CPU in 10 ms steps, about
  // what a start costs: each sample is ten starts in a row (the shell loop costs both alike).
  const startsInARow = (command, args) => () => {
    const loop = `i=0; while [ $i -lt ${STARTS_PER_SAMPLE} ]; do "$0" "$@" >/dev/null || [ $? -eq 1 ] || exit 1; i=$((i+1)); done`;
    const sample = runProcess('sh', ['-c', loop, command, ...args], { env });
    return { ...sample, ms: sample.ms / STARTS_PER_SAMPLE, cpuMs: sample.cpuMs === null ? null : sample.cpuMs / STARTS_PER_SAMPLE };
  };
  const [walkStart, prunStart] = await ctx.compare(
    [
      { label: 'bare walk, no units (floor)', run: startsInARow(node, [walkScript, empty]) },
      { label: 'prun-report-state --json --summary, no units', run: startsInARow(node, [bin, '--root', empty, '--json', '--summary']) },
    ],
    { runs: 9, warmup: 1 },
  );
  const share = (start, full) => (start.cpuMs === null || !full.cpuMs ? 'n/a' : `${((100 * start.cpuMs) / full.cpuMs).toFixed(0)}%`);
  const startNote =
    `Per start, from samples of ${STARTS_PER_SAMPLE} starts in a row. Over ${UNITS.toLocaleString('en')} units, start-up is ` +
    `${share(walkStart, perUnit[1])} of the walk's CPU time and ${share(prunStart, perUnit[3])} of report-state's: the rest is per-unit work.`;
  process.stdout.write('  start-up (a root with no unit):\n');
  ctx.table([walkStart, prunStart], { readme: 'report-state', title: 'start-up: a root with no unit', note: startNote });
  process.stdout.write(`  ${startNote}\n`);
}
