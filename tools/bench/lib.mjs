// Shared helpers for bench workloads. A workload module exports `title` and
// `async run(ctx)`; it measures a baseline (the floor: the same work without prun) and
// prun's own runs with `ctx.measure`, then prints them with `ctx.report`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

// GNU time reports a child's peak RSS (Node cannot: spawnSync gives no rusage). Without it the
// RSS columns read n/a; tools/debian-packages.txt installs it.
const GNU_TIME = ['/usr/bin/time'].find((path) => existsSync(path) && spawnSync(path, ['-f', '%M', 'true'], { stdio: 'ignore' }).status === 0);
export const haveRss = GNU_TIME !== undefined;

/** Tables recorded for `--write-readmes`: package folder -> [{ title, rows, note }]. */
export const readmeTables = new Map();

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Run `command args` once to completion: wall milliseconds, CPU milliseconds (user + system;
 * steadier than wall time on a loaded machine) and peak RSS in MiB (both null without GNU
 * time). A non-zero exit fails the measurement unless `okCodes` lists it.
 */
export function runProcess(command, args = [], { env = process.env, cwd, okCodes = [0] } = {}) {
  const rssFile = GNU_TIME ? timeOutputFile() : null;
  const [file, argv] = GNU_TIME ? [GNU_TIME, ['-f', '%U %S %M', '-o', rssFile, command, ...args]] : [command, args];
  const start = process.hrtime.bigint();
  const result = spawnSync(file, argv, { env, cwd, stdio: 'ignore' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.error) throw result.error;
  if (!okCodes.includes(result.status)) throw new Error(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
  // GNU time writes "Command exited with non-zero status N" first when it did; ours is last.
  if (!rssFile) return { ms, cpuMs: null, rssMiB: null };
  const [user, system, kib] = readFileSync(rssFile, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
  return { ms, cpuMs: (user + system) * 1000, rssMiB: kib / 1024 };
}

let timeOutput = null;

/**
 * The one file GNU time writes its figures to, rewritten in place by every run (its folder is
 * removed with the workloads' folders, at the end of the bench). Not a new file each run: on a
 * file system that makes a new file pay for every file deleted in the last minutes (ext4
 * without a journal, README "Deleting at the end"), the bench's own deletions would tax the
 * workloads measured after them.
 */
function timeOutputFile() {
  if (timeOutput === null) {
    const dir = mkdtempSync(join(tmpdir(), 'prun-bench-rss-'));
    leftForTheEnd.push(dir);
    timeOutput = join(dir, 'rss');
  }
  return timeOutput;
}

/** Folders the bench removes once every workload has run (`removeLeftovers`). */
const leftForTheEnd = [];

/** How many folders are left for the end so far (for `removeLeftovers(count)`). */
export function leftoverCount() {
  return leftForTheEnd.length;
}

/**
 * Remove the first `count` of the workloads' temporary folders (all by default) and return the
 * rest: called once, after the last workload, so no workload's removal lands in the minutes
 * before another's measurements (README, "Deleting at the end"); or when a signal ends the run.
 */
export function removeLeftovers(count = leftForTheEnd.length) {
  for (const dir of leftForTheEnd.splice(0, count)) rmSync(dir, { recursive: true, force: true });
  return leftForTheEnd.splice(0);
}

function formatDiff(value, unit) {
  return `${value >= 0 ? '+' : '-'}${Math.abs(value).toFixed(1)} ${unit}`;
}

/**
 * The machine's CPU time so far as /proc/stat's first line counts it (clock ticks): all of it,
 * and the part stolen (a virtual machine's host ran something else on its cores), or null off Linux.
 */
export function machineCpuTicks() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is counted in user already).
    const total = fields.slice(0, 8).reduce((sum, n) => sum + n, 0);
    return { total, steal: fields[7] ?? 0 };
  } catch {
    return null;
  }
}

/** The share (0 to 1) of the machine's CPU time stolen since a `machineCpuTicks` reading, or null. */
export function stealSince(before) {
  const after = machineCpuTicks();
  if (before === null || after === null || after.total <= before.total) return null;
  return (after.steal - before.steal) / (after.total - before.total);
}

/** One line about the machine, for README tables: what the ratios were measured on. */
export function machineLine() {
  // The bench's own environment; each table's note says whether its measured processes had the variable.
  const ca = process.env.NODE_EXTRA_CA_CERTS ? ', the bench run with NODE_EXTRA_CA_CERTS set (see each note for the measured processes)' : '';
  return `Node ${process.version}, ${process.platform} ${process.arch}, ${cpus().length} cores${ca}`;
}

export function makeContext(title) {
  return {
    repoRoot,
    title,
    /** A fresh temporary directory, removed once every workload has run (`removeLeftovers`). */
    tempDir(prefix = 'prun-bench-') {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      leftForTheEnd.push(dir);
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
    /**
     * Measure several cases in interleaved rounds (baseline, a, b, baseline, a, b, ...), so a
     * change in the machine's load hits every case alike. Each case is `{ label, run }` where
     * `run()` returns `{ ms, rssMiB }` (as `runProcess` does); returns rows `{ label, ms,
     * rssMiB }` of medians, ready for `report` (first case = baseline).
     */
    async compare(cases, { runs = 5, warmup = 1 } = {}) {
      const samples = cases.map(() => ({ ms: [], cpu: [], rss: [] }));
      for (let round = 0; round < warmup + runs; round += 1) {
        for (const [index, item] of cases.entries()) {
          const sample = await item.run();
          if (round < warmup) continue;
          samples[index].ms.push(sample.ms);
          if (sample.rssMiB !== null && sample.rssMiB !== undefined) samples[index].rss.push(sample.rssMiB);
          if (sample.cpuMs !== null && sample.cpuMs !== undefined) samples[index].cpu.push(sample.cpuMs);
        }
      }
      return cases.map((item, index) => ({
        label: item.label,
        ms: median(samples[index].ms),
        rssMiB: samples[index].rss.length > 0 ? median(samples[index].rss) : null,
        cpuMs: samples[index].cpu.length > 0 ? median(samples[index].cpu) : null,
        ...(item.readmeLabel ? { readmeLabel: item.readmeLabel } : {}),
      }));
    },
    /**
     * Print rows `{ label, ms, cpuMs?, rssMiB? }` as time ratios to the first row and, where
     * measured, CPU time and peak RSS with their differences to the first row (RSS: to the row
     * `rssBaseline`, an index, default 0).
     * `readme: '<package folder>'` also records the rows (ratios and differences only) for
     * `pnpm bench --write-readmes` (see README.md).
     */
    table(rows, { rssBaseline = 0, readme, title: tableTitle = title, note } = {}) {
      const base = rows[0];
      const rssBase = rows[rssBaseline];
      const width = Math.max(...rows.map((row) => row.label.length));
      for (const row of rows) {
        const tag = row === base ? '(baseline)' : `x${(row.ms / base.ms).toFixed(2)}  ${formatDiff(row.ms - base.ms, 'ms')}`;
        let rss = '';
        if (row.cpuMs !== null && row.cpuMs !== undefined) {
          rss += `  cpu ${row.cpuMs.toFixed(0).padStart(5)} ms`;
          if (row !== base && base.cpuMs) rss += ` ${formatDiff(row.cpuMs - base.cpuMs, 'ms').padEnd(10)}`;
          else rss += ' '.repeat(11);
        }
        if (row.rssMiB !== null && row.rssMiB !== undefined) {
          rss += `  ${row.rssMiB.toFixed(1).padStart(6)} MiB`;
          if (row !== rssBase && rssBase?.rssMiB) rss += ` ${formatDiff(row.rssMiB - rssBase.rssMiB, 'MiB')} vs ${rssBase.label}`;
        }
        process.stdout.write(`  ${row.label.padEnd(width)}  ${row.ms.toFixed(1).padStart(8)} ms  ${tag.padEnd(22)}${rss}\n`);
      }
      if (readme) this.record(readme, { title: tableTitle, rows, rssBaseline, note });
    },
    /** Record a table `{ title, rows, rssBaseline?, note? }` for a package's README (`--write-readmes`). */
    record(folder, table) {
      if (!readmeTables.has(folder)) readmeTables.set(folder, []);
      readmeTables.get(folder).push({ rssBaseline: 0, ...table });
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
  };
}

/**
 * The folder holding the original tools to compare against (multi_agent.py, the seed skill's
 * scripts), outside this repository: PRUN_BENCH_ORIGINALS, or PRUN_ORIGINALS as the tests read
 * it. Null when neither is set; workloads then compare against the recorded floor only.
 */
export function originalsDir() {
  return process.env.PRUN_BENCH_ORIGINALS || process.env.PRUN_ORIGINALS || null;
}
