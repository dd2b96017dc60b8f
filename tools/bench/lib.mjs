// Shared helpers for bench workloads. A workload module exports `title` and
// `async run(ctx)`; it measures a baseline (the floor: the same work without prun) and
// prun's own runs with `ctx.measure`, then prints them with `ctx.report`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export function makeContext(title) {
  const dirs = [];
  return {
    repoRoot,
    title,
    /** A fresh temporary directory, removed when the workload ends. */
    tempDir(prefix = 'prun-bench-') {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    /** Run `fn` `runs` times (after `warmup` unmeasured runs); return the median in ms. */
    async measure(fn, { runs = 5, warmup = 1 } = {}) {
      for (let i = 0; i < warmup; i += 1) await fn();
      const times = [];
      for (let i = 0; i < runs; i += 1) {
        const start = process.hrtime.bigint();
        await fn();
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      times.sort((a, b) => a - b);
      return times[Math.floor(times.length / 2)];
    },
    /** Print rows `{ label, ms }` (or `{ label, value, unit }`) as ratios to the first row. */
    report(rows) {
      const base = rows[0];
      const width = Math.max(...rows.map((r) => r.label.length));
      for (const row of rows) {
        const value = row.ms ?? row.value;
        const unit = row.unit ?? 'ms';
        const ratio = base && (base.ms ?? base.value) > 0 ? value / (base.ms ?? base.value) : NaN;
        const tag = row === base ? '(baseline)' : `x${ratio.toFixed(2)}`;
        process.stdout.write(`  ${row.label.padEnd(width)}  ${value.toFixed(1).padStart(10)} ${unit}  ${tag}\n`);
      }
    },
    async cleanup() {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
