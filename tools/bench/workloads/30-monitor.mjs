// prun-monitor: how fast it reacts to a result, and what watching costs.
// BENCH_MONITOR_SECONDS shortens the 60 s CPU run (e.g. BENCH_MONITOR_SECONDS=10 pnpm bench monitor).
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_FILES } from '@prun/unit-state';

export const title = 'prun-monitor: reaction latency (result lands -> exit) and CPU for 200 growing units';

const UNITS = 200;
const WINDOW_S = 1;

function startMonitor(ctx, args, env) {
  const bin = join(ctx.repoRoot, 'packages', 'monitor', 'bin', 'prun-monitor.js');
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

export async function run(ctx) {
  const latencies = [];
  for (let i = 0; i < 3; i += 1) latencies.push(await reactionOnce(ctx));
  latencies.sort((a, b) => a - b);
  ctx.report([
    { label: `stable window ${WINDOW_S} s (floor)`, ms: WINDOW_S * 1000 },
    { label: 'result lands -> prun-monitor exits (poll 15 s)', ms: latencies[1] },
  ]);

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
    [process.execPath, join(ctx.repoRoot, 'packages', 'monitor', 'bin', 'prun-monitor.js'), ...units],
    { ...env, PRUN_MONITOR_TIMEOUT: String(seconds) },
    () => {
      writer = setInterval(() => {
        appendFileSync(join(units[next], STATE_FILES.tail), '{"event": "message", "text": "working"}\n');
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
}
