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

// The tests start thousands of Node processes (every bin, every fake agy) and reach nothing
// beyond 127.0.0.1, so no test needs extra TLS roots. With NODE_EXTRA_CA_CERTS set (as on
// machines behind a TLS-inspecting proxy) each of those processes parses the bundle at start-up,
// about 28 ms of CPU apiece, which on a 2-core machine is about a minute of the whole run.
// Dropped for the test run only: installing and releasing still see it.
const { NODE_EXTRA_CA_CERTS: _extraCaCerts, ...testEnv } = process.env;
const nx = spawnSync('pnpm', ['exec', 'nx', 'run-many', '-t', 'test', '--parallel=2', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: testEnv,
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
