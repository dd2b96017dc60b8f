#!/usr/bin/env node
// `pnpm bench [--write-readmes] [name-filter...]`: runs every workload in tools/bench/workloads/
// and prints, for each measurement, its median wall time and its ratio to the baseline (the
// physical floor) measured in the same run. Benchmarks never pass or fail on absolute times.
// With --write-readmes, the tables workloads recorded for a package replace the generated block
// in that package's README (see README.md).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { STOP_SIGNALS, signalExitCode } from '@prun/kit/cli';
import { leftoverCount, makeContext, readmeTables, removeLeftovers, repoRoot } from './lib.mjs';
import { writeReadmes } from './readme.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const args = process.argv.slice(2);
const writeReadmesWanted = args.includes('--write-readmes');
const filters = args.filter((arg) => arg !== '--write-readmes');
const files = readdirSync(join(here, 'workloads'))
  .filter((f) => f.endsWith('.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

if (files.length === 0) {
  process.stdout.write('bench: no workloads' + (filters.length ? ` match ${filters.join(' ')}` : '') + '\n');
}
// Ctrl-C or a kill mid-run ends the run as that signal would have, removing the folders of the
// workloads that have ended. The running workload's stay, and are named: its processes (a batch
// publishing its interrupted units, after the same Ctrl-C) may still be writing there.
let endedWorkloadsFolders = 0;
for (const signal of STOP_SIGNALS) {
  process.once(signal, () => {
    const left = removeLeftovers(endedWorkloadsFolders);
    if (left.length > 0) process.stdout.write(`\nbench: ${signal}: the interrupted workload's folders are left: ${left.join(' ')}\n`);
    process.exit(signalExitCode(signal));
  });
}
let failures = 0;
for (const file of files) {
  const workload = await import(pathToFileURL(join(here, 'workloads', file)).href);
  const ctx = makeContext(workload.title ?? file);
  process.stdout.write(`\n== ${workload.title ?? file}\n`);
  try {
    await workload.run(ctx);
  } catch (error) {
    failures += 1;
    process.stdout.write(`bench: ${file} failed: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  endedWorkloadsFolders = leftoverCount();
}
removeLeftovers();
if (writeReadmesWanted) {
  // A filtered run keeps the other workloads' tables; a full run writes every block anew.
  for (const line of writeReadmes(repoRoot, readmeTables, { keepOthers: filters.length > 0 })) process.stdout.write(`${line}\n`);
}
process.exitCode = failures === 0 ? 0 : 1;
