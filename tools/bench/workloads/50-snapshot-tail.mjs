import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const MIB = 1024 * 1024;
const sizeMib = Number(process.env.PRUN_BENCH_SNAPSHOT_MIB ?? 1024);

export const title = `snapshot-tail of a ${sizeMib} MiB tail beside \`cat tail | sha256sum\` (set PRUN_BENCH_SNAPSHOT_MIB for a smaller run)`;

// Real blocks, not a sparse file: every MiB is written, and each differs from the last.
function writeTail(path) {
  const fd = openSync(path, 'w');
  const block = randomBytes(MIB);
  try {
    for (let i = 0; i < sizeMib; i += 1) {
      block.writeUInt32BE(i, 0);
      writeSync(fd, block);
    }
  } finally {
    closeSync(fd);
  }
}

export async function run(ctx) {
  if (!Number.isInteger(sizeMib) || sizeMib <= 0) throw new Error('PRUN_BENCH_SNAPSHOT_MIB must be a positive integer');
  const root = ctx.tempDir('prun-bench-snapshot-');
  const unit = join(root, 'prun-task-bench');
  const dest = join(root, 'dest');
  mkdirSync(unit);
  mkdirSync(dest, { mode: 0o700 });
  const tail = join(unit, 'tail');
  writeTail(tail);
  const bin = join(ctx.repoRoot, 'packages', 'snapshot-tail', 'bin', 'prun-snapshot-tail.js');
  const options = { runs: 3, warmup: 1 };
  const floor = await ctx.measure(() => execFileSync('sh', ['-c', 'cat "$1" | sha256sum >/dev/null', 'sh', tail]), options);
  let n = 0;
  const snapshot = await ctx.measure(() => {
    const output = join(dest, `s${(n += 1)}.zip`);
    execFileSync(process.execPath, [bin, '--unit', unit, '--output', output], { stdio: 'ignore' });
    rmSync(output);
  }, options);
  ctx.report([
    { label: 'cat tail | sha256sum (floor)', ms: floor },
    { label: 'prun-snapshot-tail (read, zip, validate, link)', ms: snapshot },
  ]);
}
