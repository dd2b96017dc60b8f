// What the live panel costs: a 100-unit batch of instant fake-agy units on a terminal (a pty
// from util-linux `script`), with the panel (TERM=xterm) and with plain progress lines
// (NO_COLOR=1, the panel off), in interleaved rounds. CPU time is the whole batch's: prun, its
// dispatchers and their workers. Goal: the panel adds at most 1% CPU.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../lib.mjs';

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
    process.stdout.write(`  live panel CPU: ${(((live.cpuMs - plain.cpuMs) / plain.cpuMs) * 100).toFixed(2)}% of the plain batch's (goal: <= 1%)\n`);
  }
}
