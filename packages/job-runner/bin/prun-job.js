#!/usr/bin/env node
// Thin shim: starts the bundled bin (src/bin.ts with everything it loads, CommonJS files built
// by `pnpm build`: tools/bundle-bin.mjs --cjs --edge --split). CommonJS (bin/package.json), so
// Node reads it synchronously and starts neither its ES module loader nor a thread pool for the
// start. A run's detached runner starts through this same file (`prun-job __runner ...`).
'use strict';
// Node's compile cache exists from Node 22; on Node 20 requiring node:module alone brings in the
// ES module loader (about 1 ms a start), so it is asked for only where it can exist.
if (Number(process.versions.node.split('.')[0]) >= 22) require('node:module').enableCompileCache?.();
require('../dist/bundle-bin.cjs');
