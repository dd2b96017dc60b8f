// What the live panel costs: a 100-unit batch of instant fake-agy units on a terminal (a pty
// from util-linux `script`), with the panel (TERM=xterm) and with plain progress lines
// (NO_COLOR=1, the panel off), in interleaved rounds. CPU time is the whole batch's: prun, its
// dispatchers and their workers. Goal: the panel adds at most 1% CPU.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runProcess } from '../lib.mjs';

const FRAMES = 300;

/**
 * The panel's own cost, without the noise of a whole batch: CPU per frame (sampling the state,
 * the lines painted and plain, the redraw) for a 100-unit batch on a 120x30 terminal whose
 * output goes nowhere. Frames differ (the clock moves a second each), as in a real batch.
 */
async function frameCpuMs(repoRoot, units) {
  const dist = (file) => pathToFileURL(join(repoRoot, 'packages/prun/dist/live', file)).href;
  const { LivePanel } = await import(dist('live-panel.js'));
  const sink = { isTTY: true, columns: 120, rows: 30, write: () => true, on: () => sink, off: () => sink };
  const now = Date.now();
  const latest = new Map();
  const ids = [];
  for (let i = 0; i < units; i += 1) {
    const id = `u${i}`;
    ids.push(id);
    const status = i < units / 2 ? 'done' : i < units / 2 + 2 ? 'running' : 'queued';
    latest.set(id, {
      id, status, model: 'gemini-3.8-flash-high', mode: null, prompt_file: '/p', clone_dir: null, result_file: `/r/${id}.md`,
      state_dir: status === 'queued' ? null : `/nonexistent/prun-task-${id}`,
      started_at: status === 'queued' ? null : new Date(now - 5000).toISOString(),
      ended_at: status === 'done' ? new Date(now - 1000 + i).toISOString() : null, exit_code: status === 'done' ? 0 : null, attempt: 1,
    });
  }
  // Opening the first panel loads the terminal libraries: a one-time cost, counted apart.
  const opening = process.cpuUsage();
  const panel = await LivePanel.open({ dir: 'fanout', batchDir: '/nonexistent', env: {}, stallSeconds: 600, startedAtMs: now, jobs: 2 }, () => ({ ids, latest, stalled: new Set() }), sink);
  const openUsed = process.cpuUsage(opening);
  const realNow = Date.now;
  let tick = 0;
  Date.now = () => realNow() + tick * 1000;
  const start = process.cpuUsage();
  for (; tick < FRAMES; tick += 1) panel.draw();
  const used = process.cpuUsage(start);
  Date.now = realNow;
  panel.close();
  return { openMs: (openUsed.user + openUsed.system) / 1000, frameMs: (used.user + used.system) / 1000 / FRAMES };
}

export const title = 'prun batch on a terminal: live panel vs plain progress lines, 100 instant units';

const UNITS = Number(process.env.PRUN_BENCH_BATCH_UNITS ?? 100);
const RUNS = Number(process.env.PRUN_BENCH_LIVE_RUNS ?? 3);

const quote = (word) => `'${word.replaceAll("'", "'\\''")}'`;

export async function run(ctx) {
  if (spawnSync('script', ['--version'], { stdio: 'ignore' }).status !== 0) {
    process.stdout.write('  skipped: util-linux `script` is not installed (no pty to draw on)\n');
    return;
  }
  const jobs = availableParallelism();
  const prunBin = join(ctx.repoRoot, 'packages/prun/bin/prun.js');
  const root = ctx.tempDir();
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    TMPDIR: root,
    ANTIGRAVITY_BIN: join(ctx.repoRoot, 'tools/fake-agy/fake-agy'),
    ANTIGRAVITY_PREFLIGHT: 'off',
    PRUN_AGY_QUOTA_GATE: 'off',
  };
  const plan = join(root, 'plan.json');
  writeFileSync(plan, JSON.stringify({ units: Array.from({ length: UNITS }, (_, i) => ({ id: `u${i}`, prompt: `unit ${i}` })) }));
  let n = 0;
  // stderr (the panel or the progress lines) on the pty; stdout (the final table) to /dev/null.
  const batchOnTerminal = (extra) => () => {
    n += 1;
    const command = `${[process.execPath, prunBin, 'batch', plan, '--dir', join(root, `batch-${n}`), '--jobs', String(jobs)].map(quote).join(' ')} > /dev/null`;
    return runProcess('script', ['-qefc', command, '/dev/null'], { env: { ...env, ...extra }, cwd: root });
  };
  const rows = await ctx.compare(
    [
      { label: `plain progress lines (NO_COLOR=1), ${UNITS} units, --jobs ${jobs}`, run: batchOnTerminal({ TERM: 'xterm', NO_COLOR: '1' }) },
      { label: `live panel (TERM=xterm), ${UNITS} units, --jobs ${jobs}`, run: batchOnTerminal({ TERM: 'xterm' }) },
    ],
    { runs: RUNS, warmup: 0 },
  );
  ctx.table(rows);
  const [plain, live] = rows;
  if (plain.cpuMs && live.cpuMs) {
    process.stdout.write(`  live panel CPU, batch against batch: ${(((live.cpuMs - plain.cpuMs) / plain.cpuMs) * 100).toFixed(2)}% of the plain batch's (noisy: both include every worker)\n`);
    // One frame a second for as long as the batch ran.
    const { openMs, frameMs } = await frameCpuMs(ctx.repoRoot, UNITS);
    const frames = live.ms / 1000;
    const total = openMs + frameMs * frames;
    process.stdout.write(
      `  live panel CPU, measured in-process: ${openMs.toFixed(0)} ms to load and open + ${frameMs.toFixed(2)} ms a frame x ${frames.toFixed(0)} frames = ${total.toFixed(0)} ms, ${((total / plain.cpuMs) * 100).toFixed(2)}% of the plain batch's (goal: <= 1%)\n`,
    );
  }
}
