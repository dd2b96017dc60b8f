#!/usr/bin/env node
// Installs the pinned verdaccio (the local npm registry of `pnpm release:check`) into
// tools/registry/node_modules with `npm ci`, and downloads the mirrored third-party tarballs
// the round trip serves from it (tools/release/mirror.mjs). Run by the root `postinstall`,
// so the README's set-up command brings both along; a repeat run is a no-op.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installNpmProject } from '../npm-project.mjs';
import { fetchTarballs } from '../release/mirror.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const ok = installNpmProject({
  dir: here,
  label: 'tools/registry/install.mjs',
  required: [join(here, 'node_modules', 'verdaccio', 'build', 'index.js')],
});
if (!ok) process.exitCode = 1;
else {
  try {
    fetchTarballs();
  } catch (error) {
    console.error(`tools/registry/install.mjs: ${error.message}`);
    process.exitCode = 1;
  }
}
