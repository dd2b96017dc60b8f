#!/usr/bin/env node
// Thin shim: starts the bundled bin (src/monitor-bin.ts with everything it loads, one CommonJS file
// built by `pnpm build`: tools/bundle-bin.mjs --cjs). CommonJS, so Node reads it synchronously
// and starts neither its ES module loader nor a thread pool for a single pass.
'use strict';
// Node's compile cache exists from Node 22; on Node 20 requiring node:module alone brings in the
// ES module loader (about 1 ms a start), so it is asked for only where it can exist.
if (Number(process.versions.node.split('.')[0]) >= 22) require('node:module').enableCompileCache?.();
require('../dist/bundle-monitor-bin.cjs');
