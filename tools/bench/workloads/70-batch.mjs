// prun's overhead on a whole fan-out: a 100-unit batch of instant fake-agy units, beside 100
// bare fake-agy worker runs at the same concurrency (the floor: the workers themselves).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

export const title = 'prun batch: 100 instant units beside 100 bare fake-agy runs at the same concurrency';

const UNITS = Number(process.env.PRUN_BENCH_BATCH_UNITS ?? 100);

function exec(command, args, options) {
  return new Promise((resolve, reject) => {
    const { input, ...rest } = options ?? {};
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'ignore'], ...rest });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
    child.stdin.end(input);
  });
}

async function pool(count, jobs, task) {
  let next = 0;
  const workers = Array.from({ length: Math.min(jobs, count) }, async () => {
    while (next < count) {
      const i = next;
      next += 1;
      await task(i);
    }
  });
  await Promise.all(workers);
}


export async function run(ctx) {
  const jobs = availableParallelism();
  const fakeAgy = join(ctx.repoRoot, 'tools/fake-agy/fake-agy');
  const prunBin = join(ctx.repoRoot, 'packages/prun/bin/prun.js');
  const root = ctx.tempDir();
  const env = {
    ...process.env,
    HOME: root,
    TMPDIR: root,
    ANTIGRAVITY_BIN: fakeAgy,
    ANTIGRAVITY_PREFLIGHT: 'off',
    PRUN_AGY_QUOTA_GATE: 'off',
    FAKE_AGY_RESPONSE: '# unit result\nConclusion: complete\nFiles: none\nOpen items: none\nVerification: bench\n',
  };
  const line = `${JSON.stringify({ event: 'user', message: { content: 'bench' } })}\n`;
  const floor = await ctx.measure(
    () => pool(UNITS, jobs, () => exec(fakeAgy, ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high', '--mode', 'plan'], { env, input: line })),
    { runs: 1, warmup: 0 },
  );
  const plan = join(root, 'plan.json');
  writeFileSync(plan, JSON.stringify({ units: Array.from({ length: UNITS }, (_, i) => ({ id: `u${i}`, prompt: `unit ${i}` })) }));
  let n = 0;
  const batch = await ctx.measure(
    () => {
      n += 1;
      return exec(process.execPath, [prunBin, 'batch', plan, '--dir', join(root, `batch-${n}`), '--jobs', String(jobs), '--json'], { env, cwd: root });
    },
    { runs: 1, warmup: 0 },
  );
  ctx.report([
    { label: `${UNITS} bare fake-agy runs, ${jobs} at a time (floor)`, ms: floor },
    { label: `prun batch of ${UNITS} units, --jobs ${jobs}`, ms: batch },
  ]);
}
