import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { runProcess } from '../lib.mjs';

const MIB = 1024 * 1024;
const sizeMib = Number(process.env.PRUN_BENCH_SNAPSHOT_MIB ?? 1024);

export const title = `snapshot-tail of a ${sizeMib} MiB tail beside \`cp\` + \`openssl dgst -sha256\` of the same file (PRUN_BENCH_SNAPSHOT_MIB for a smaller run)`;

// Goals (issue 15): at most 1.3x the floor's time, peak RSS at most 64 MiB.
const GOAL_RATIO = 1.3;
const GOAL_RSS_MIB = 64;

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
  const copy = join(dest, 'copy');
  const output = join(dest, 'snapshot.zip');
  // The floor does the same I/O and one SHA-256: copy the bytes, hash them once. The snapshot
  // additionally reads its archive back and hashes it again after closing it (the contract).
  const rows = await ctx.compare(
    [
      {
        label: 'cp tail + openssl dgst -sha256 tail (floor)',
        run: () => {
          try {
            return runProcess('sh', ['-c', 'cp "$1" "$2" && openssl dgst -sha256 "$1" >/dev/null', 'sh', tail, copy]);
          } finally {
            rmSync(copy, { force: true });
          }
        },
      },
      { label: 'node -e "" (RSS floor)', run: () => runProcess(process.execPath, ['-e', '']) },
      {
        label: 'prun-snapshot-tail (read, zip, verify, link)',
        readmeLabel: `\`prun-snapshot-tail\` of a ${sizeMib} MiB tail`,
        run: () => {
          try {
            return runProcess(process.execPath, [bin, '--unit', unit, '--output', output]);
          } finally {
            rmSync(output, { force: true });
          }
        },
      },
    ],
    { runs: Number(process.env.PRUN_BENCH_SNAPSHOT_RUNS ?? 3), warmup: 1 },
  );
  const [floor, , snapshot] = rows;
  // The middle row is only the RSS reference; the README shows the floor and the snapshot.
  ctx.table(rows, { rssBaseline: 1 });
  ctx.record('snapshot-tail', {
    title: `Snapshot of a ${sizeMib} MiB tail beside \`cp\` + \`openssl dgst -sha256\` of the same file`,
    rows: [floor, snapshot],
    note: `Goal: at most ${GOAL_RATIO}× the floor and ${GOAL_RSS_MIB} MiB peak RSS.`,
  });
  const ratio = snapshot.ms / floor.ms;
  process.stdout.write(
    `  goal ${GOAL_RATIO}x / ${GOAL_RSS_MIB} MiB: time x${ratio.toFixed(2)} ${ratio <= GOAL_RATIO ? 'within' : 'OVER'}` +
      (snapshot.rssMiB === null ? ', RSS n/a (no GNU time)\n' : `, RSS ${snapshot.rssMiB.toFixed(1)} MiB ${snapshot.rssMiB <= GOAL_RSS_MIB ? 'within' : 'OVER'}\n`),
  );
}
