#!/usr/bin/env node
// `pnpm test`: run every package's tests through nx, then print one closing line
// `tests: N passed, N failed, N skipped` summed from each package's vitest JSON report.
// The exit code is nx's, so a failing package fails the run even if its report is missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const packagesDir = join(root, 'packages');
const reports = readdirSync(packagesDir).map((name) => join(packagesDir, name, 'test-results.json'));
for (const report of reports) rmSync(report, { force: true });

const nx = spawnSync('pnpm', ['exec', 'nx', 'run-many', '-t', 'test', '--parallel=2', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});

let passed = 0;
let failed = 0;
let skipped = 0;
for (const report of reports) {
  if (!existsSync(report)) continue;
  try {
    const data = JSON.parse(readFileSync(report, 'utf8'));
    passed += data.numPassedTests ?? 0;
    failed += (data.numFailedTests ?? 0) + (data.numFailedTestSuites ?? 0);
    skipped += (data.numPendingTests ?? 0) + (data.numTodoTests ?? 0);
  } catch {
    failed += 1;
  }
}
const code = nx.status ?? 1;
if (code !== 0 && failed === 0) failed = 1;
process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exitCode = code;
