// prun-monitor: one single pass over a finished unit beside `node -e ''` (and the original), how
// fast it reacts to a result, what watching costs, and what one huge stdin line costs (a 100 MB
// line beside a 10 MB one: linear time, bounded memory).
// BENCH_MONITOR_SECONDS shortens the 60 s CPU run (e.g. BENCH_MONITOR_SECONDS=10 pnpm bench monitor).
// Goals (issue #15): 200 growing units for 60 s cost at most 1 CPU-second; reaction under 0.1 s
// past the stable window.
import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILES } from '@prun/unit-state';
import * as lib from '../lib.mjs';

export const title = 'prun-monitor: single pass beside node, reaction latency (result lands -> exit) and CPU for 200 growing units';

const UNITS = 200;
const WINDOW_S = 1;

function startMonitor(ctx, args, env) {
  const bin = join(ctx.repoRoot, 'packages', 'monitor', 'bin', 'prun-monitor.cjs');
  const child = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  const started = new Promise((resolve) => {
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('MONITOR-START')) resolve();
    });
  });
  const exited = new Promise((resolve) => child.on('close', () => resolve(Date.now())));
  return { started, exited };
}

/** ms from a result landing to the monitor's exit, default poll (15 s). */
async function reactionOnce(ctx) {
  const dir = ctx.tempDir();
  const unit = join(dir, 'prun-task-bench');
  mkdirSync(unit);
  writeFileSync(join(unit, STATE_FILES.tail), 'x\n');
  const result = join(dir, 'r.md');
  writeFileSync(join(unit, STATE_FILES.resultFile), `${result}\n`);
  const monitor = startMonitor(ctx, [unit], { PRUN_MONITOR_STABLE_WINDOW: String(WINDOW_S) });
  await monitor.started;
  writeFileSync(`${result}.tmp`, '# bench result\n');
  renameSync(`${result}.tmp`, result);
  const landed = Date.now();
  return (await monitor.exited) - landed;
}

/** User+system CPU ms of a command run under /usr/bin/time. */
function cpuOf(argv, env, onStart = () => {}) {
  return new Promise((resolve) => {
    const out = join(env.BENCH_DIR, `time-${Math.random().toString(16).slice(2)}`);
    const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', out, ...argv], { env, stdio: 'ignore' });
    onStart();
    child.on('close', () => {
      const [user, system] = readFileSync(out, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
      resolve((user + system) * 1000);
    });
  });
}

/** A stdin file: one line of `bytes` bytes, then a state dir whose result is already done. */
function longLineInput(dir, bytes, unit) {
  const path = join(dir, `line-${bytes}.txt`);
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(1 << 20, 0x61);
  try {
    for (let written = 0; written < bytes; written += block.length) writeSync(fd, block, 0, Math.min(block.length, bytes - written));
    writeSync(fd, `\n${unit}\n`);
  } finally {
    closeSync(fd);
  }
  return path;
}

// Issue #15 measured the original monitor's single pass over one unit at 0.048 s where a bare
// `node -e ''` took 0.045 s on the same machine, in the same environment: with the machine's
// NODE_EXTRA_CA_CERTS set (node took 0.017 s with it unset; every Node process, ours included,
// reads that certificate file as it starts). That ratio stands in for the original when no
// monitor.sh is in PRUN_BENCH_ORIGINALS (or PRUN_ORIGINALS), and it compares like for like only
// with node and prun-monitor measured with the variable set too. Goal: at most 1.5 times the original.
const RECORDED_ORIGINAL_VS_NODE = 0.048 / 0.045;
const SINGLE_PASS_GOAL = 1.5;
const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** The certificate file the recorded runs had in NODE_EXTRA_CA_CERTS: this machine's, else the system bundle. */
function recordedCaFile() {
  if (process.env.NODE_EXTRA_CA_CERTS && existsSync(process.env.NODE_EXTRA_CA_CERTS)) return process.env.NODE_EXTRA_CA_CERTS;
  return existsSync(SYSTEM_CA_BUNDLE) ? SYSTEM_CA_BUNDLE : null;
}

/** A state dir whose result is already done, and how to start a monitor that needs no wait for it. */
function finishedUnit(ctx) {
  const dir = ctx.tempDir();
  const unit = join(dir, 'prun-task-done');
  mkdirSync(unit);
  writeFileSync(join(unit, STATE_FILES.tail), '{"event": "init"}\n');
  writeFileSync(join(unit, STATE_FILES.resultFile), `${join(dir, 'r.md')}\n`);
  writeFileSync(join(dir, 'r.md'), '# done result\n');
  const bin = join(ctx.repoRoot, 'packages', 'monitor', 'bin', 'prun-monitor.cjs');
  return { dir, unit, bin, env: { PATH: process.env.PATH, PRUN_MONITOR_STABLE_WINDOW: '0' } };
}

// GNU time counts CPU in 10 ms steps, as much as the whole pass costs: each sample is this many
// starts in a row under one count (the shell loop costs both sides alike), reported per start.
const STARTS_PER_SAMPLE = 10;

function startsInARow(command, args, env) {
  const loop = `i=0; while [ $i -lt ${STARTS_PER_SAMPLE} ]; do "$0" "$@" >/dev/null || exit 1; i=$((i+1)); done`;
  return () => {
    const sample = lib.runProcess('sh', ['-c', loop, command, ...args], { env });
    return { ...sample, ms: sample.ms / STARTS_PER_SAMPLE, cpuMs: sample.cpuMs === null ? null : sample.cpuMs / STARTS_PER_SAMPLE };
  };
}

/**
 * One pass over one finished unit (stable window 0): start, observe, print, exit. Measured twice
 * over, interleaved: with NODE_EXTRA_CA_CERTS unset (as on most users' machines) and set (as
 * when the original was recorded); each ratio divides runs made in the same environment.
 */
async function singlePass(ctx) {
  if (typeof ctx.compare !== 'function' || typeof lib.runProcess !== 'function') {
    process.stdout.write('  (single pass: needs the CPU/RSS helpers of tools/bench/lib.mjs; skipped)\n');
    return;
  }
  const { unit, bin, env } = finishedUnit(ctx);
  const folder = lib.originalsDir();
  const original = folder && existsSync(join(folder, 'monitor.sh')) ? join(folder, 'monitor.sh') : null;
  const caFile = recordedCaFile();
  const caEnv = caFile === null ? null : { ...env, NODE_EXTRA_CA_CERTS: caFile };
  const cases = [
    { label: "node -e '' (floor)", run: startsInARow(process.execPath, ['-e', ''], env) },
    { label: 'prun-monitor, single pass over 1 finished unit', run: startsInARow(process.execPath, [bin, unit], env) },
  ];
  if (caEnv !== null) {
    cases.push(
      { label: "node -e '', NODE_EXTRA_CA_CERTS set", run: startsInARow(process.execPath, ['-e', ''], caEnv) },
      { label: 'prun-monitor, the same pass, NODE_EXTRA_CA_CERTS set', run: startsInARow(process.execPath, [bin, unit], caEnv) },
    );
  }
  // bash reads no NODE_EXTRA_CA_CERTS: one environment serves the original, set or not, and it
  // runs in the unset one (the same as prun-monitor's and node's first two rows).
  if (original) cases.push({ label: 'original: monitor.sh, the same pass', run: startsInARow('bash', [original, unit], env) });
  const rows = await ctx.compare(cases, { runs: 7, warmup: 1 });
  const [floor, ours] = rows;
  const [caFloor, caOurs] = caEnv === null ? [null, null] : rows.slice(2, 4);
  const theirs = original ? rows.at(-1) : null;
  const ratio = (a, b, key) => (a?.[key] && b?.[key] ? a[key] / b[key] : null);
  const times = (value) => (value === null ? 'n/a' : `×${value.toFixed(2)}`);
  const overNode = (key) => times(ratio(ours, floor, key));
  const versus = (mine) => `by CPU time ${times(ratio(mine, theirs, 'cpuMs'))} the original, by wall time ${times(ratio(mine, theirs, 'ms'))}`;
  let versusOriginal;
  // The note on the environment the verdict is not about: with the original measured, the run
  // with the variable set; without it, the run with it unset.
  let otherNote;
  if (theirs) {
    // Measured: the verdict is the run with the variable unset (as on most users' machines), the
    // same environment for both; with it set, Node's own start is slower than the whole original pass.
    versusOriginal = `${versus(ours)} (measured: monitor.sh and prun-monitor in the same environment, NODE_EXTRA_CA_CERTS unset)`;
    otherNote =
      caOurs === null
        ? ''
        : `With NODE_EXTRA_CA_CERTS set (which bash never reads), prun-monitor is ${versus(caOurs)}: ` +
          `there node -e '' alone is ${times(ratio(caFloor, theirs, 'ms'))} the original's wall time.`;
  } else if (caOurs !== null) {
    const recorded = (key) => times(ratio(caOurs, caFloor, key) === null ? null : ratio(caOurs, caFloor, key) / RECORDED_ORIGINAL_VS_NODE);
    versusOriginal =
      `by CPU time ${recorded('cpuMs')} the original, by wall time ${recorded('ms')} (recorded: issue #15 measured the original at ` +
      `×${RECORDED_ORIGINAL_VS_NODE.toFixed(2)} of node -e '' with NODE_EXTRA_CA_CERTS set; compared with prun-monitor over node -e '', ` +
      `both run here with NODE_EXTRA_CA_CERTS=${caFile}, as recorded)`;
  } else {
    versusOriginal =
      "no like-for-like comparison with the original: it was recorded with NODE_EXTRA_CA_CERTS set and no certificate file is here";
  }
  otherNote ??=
    `With NODE_EXTRA_CA_CERTS unset, prun-monitor takes ${overNode('cpuMs')} the CPU time and ${overNode('ms')} the wall time of node -e '' ` +
    "(the original's time with the variable unset was not recorded, so no ratio to it is claimed for these runs).";
  const summary = `${versusOriginal}; goal ≤ ×${SINGLE_PASS_GOAL}`;
  const perStart = `Per start, from samples of ${STARTS_PER_SAMPLE} starts in a row. CPU time is the steadier number on a loaded machine.`;
  ctx.table(theirs ? [floor, ours, theirs] : [floor, ours], {
    readme: 'monitor',
    title: 'single pass over 1 unit, NODE_EXTRA_CA_CERTS unset (as on most machines)',
    note: theirs ? `Vs the original: prun-monitor ${summary}. ${perStart}` : `${otherNote} ${perStart}`,
  });
  if (caOurs !== null) {
    process.stdout.write('\n');
    ctx.table([caFloor, caOurs], {
      readme: 'monitor',
      title: theirs ? 'single pass over 1 unit, NODE_EXTRA_CA_CERTS set' : 'single pass over 1 unit, NODE_EXTRA_CA_CERTS set (as the original was recorded)',
      note: theirs ? `${otherNote} ${perStart}` : `Vs the original: prun-monitor ${summary}. ${perStart}`,
    });
  }
  process.stdout.write(`  single pass vs the original: ${summary}\n  ${otherNote}\n`);
}

async function longLines(ctx) {
  if (typeof ctx.compare !== 'function' || typeof lib.runProcess !== 'function') {
    process.stdout.write('  (stdin line sizes: needs the CPU/RSS helpers of tools/bench/lib.mjs; skipped)\n');
    return;
  }
  const { dir, unit, bin, env } = finishedUnit(ctx);
  const feed = (file) => () => lib.runProcess('sh', ['-c', 'exec "$0" "$1" - < "$2" 2>/dev/null', process.execPath, bin, file], { env });
  const rows = await ctx.compare(
    [
      { label: 'prun-monitor -, one 10 MB stdin line (baseline)', run: feed(longLineInput(dir, 10_000_000, unit)) },
      { label: 'prun-monitor -, one 100 MB stdin line', run: feed(longLineInput(dir, 100_000_000, unit)) },
    ],
    { runs: 3, warmup: 1 },
  );
  ctx.table(rows, {
    readme: 'monitor',
    title: 'a 100 MB stdin line beside a 10 MB one',
    note: 'Linear and bounded: ten times the line costs far less than ten times the time, and the memory stays put (a line over 8192 bytes is skipped as it streams past).',
  });
}

export async function run(ctx) {
  await singlePass(ctx);
  process.stdout.write('\n');
  await longLines(ctx);
  process.stdout.write('\n');
  const latencies = [];
  for (let i = 0; i < 3; i += 1) latencies.push(await reactionOnce(ctx));
  latencies.sort((a, b) => a - b);
  const reactionRows = [
    { label: `stable window ${WINDOW_S} s (floor)`, ms: WINDOW_S * 1000 },
    { label: 'result lands -> prun-monitor exits (poll 15 s)', ms: latencies[1] },
  ];
  ctx.report(reactionRows);
  const reactionMs = latencies[1] - WINDOW_S * 1000;
  process.stdout.write(`  reaction past the window: ${reactionMs.toFixed(0)} ms (goal < 100 ms)\n\n`);
  ctx.record?.('monitor', {
    title: 'reaction: a result lands, the monitor exits',
    rows: reactionRows.map((row) => ({ ...row, rssMiB: null })),
    note: `The floor is the stable window itself; the monitor woke ${(reactionMs / 1000).toFixed(2)} s past it (goal: under 0.1 s).`,
  });

  const seconds = Number(process.env.BENCH_MONITOR_SECONDS ?? 60);
  const dir = ctx.tempDir();
  const units = [];
  for (let i = 0; i < UNITS; i += 1) {
    const unit = join(dir, `prun-task-u${i}`);
    mkdirSync(unit);
    writeFileSync(join(unit, STATE_FILES.tail), '{"event": "init"}\n');
    writeFileSync(join(unit, STATE_FILES.resultFile), `${join(dir, `u${i}.md`)}\n`);
    units.push(unit);
  }
  const env = { PATH: process.env.PATH, BENCH_DIR: dir };
  const sleepCpu = await cpuOf(['sleep', String(seconds)], env);
  const idleNodeCpu = await cpuOf([process.execPath, '-e', `setTimeout(() => {}, ${seconds * 1000})`], env);
  // Every unit's tail grows about once a second, as live workers' stream output does.
  let next = 0;
  let writer;
  const monitorCpu = await cpuOf(
    [process.execPath, join(ctx.repoRoot, 'packages', 'monitor', 'bin', 'prun-monitor.cjs'), ...units],
    { ...env, PRUN_MONITOR_TIMEOUT: String(seconds) },
    () => {
      writer = setInterval(() => {
        appendFileSync(join(units[next], STATE_FILES.tail), '{"event": "step_update", "step_update": {"step_index": 1, "step_type": "agent_response", "state": "ACTIVE", "text_delta": "working"}}\n');
        next = (next + 1) % units.length;
      }, 1000 / UNITS);
    },
  );
  clearInterval(writer);
  // `sleep` is the true floor but rounds to 0 ms (no ratio to it), so an idle Node process of the
  // same length is the baseline and sleep is shown beside it.
  ctx.report([
    { label: `idle node ${seconds} s (floor for a Node process)`, value: idleNodeCpu, unit: 'ms cpu' },
    { label: `sleep ${seconds} (floor)`, value: sleepCpu, unit: 'ms cpu' },
    { label: `prun-monitor, ${UNITS} growing units, ${seconds} s`, value: monitorCpu, unit: 'ms cpu' },
  ]);
  // The goal is for 60 s; a shorter run (BENCH_MONITOR_SECONDS) scales it.
  const goalMs = (1000 * seconds) / 60;
  process.stdout.write(`  prun-monitor: ${monitorCpu.toFixed(0)} ms CPU for ${UNITS} growing units over ${seconds} s (goal <= ${goalMs.toFixed(0)} ms)\n`);
  ctx.record?.('monitor', {
    title: `cost: ${UNITS} growing units watched for ${seconds} s`,
    rows: [
      // Both run for the same wall time; CPU time is the measurement.
      { label: `idle node ${seconds} s (floor for a Node process)`, ms: seconds * 1000, cpuMs: idleNodeCpu, rssMiB: null },
      { label: `prun-monitor, ${UNITS} growing units, ${seconds} s`, ms: seconds * 1000, cpuMs: monitorCpu, rssMiB: null },
    ],
    note: `${(monitorCpu / 1000).toFixed(2)} CPU-s against the goal of ${(goalMs / 1000).toFixed(2)} (1 CPU-s per 60 s).`,
  });
}
