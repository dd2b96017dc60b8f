#!/usr/bin/env node
// Thin shim: starts the bundled bin (src/monitor-bin.ts with everything it loads, one CommonJS file
// built by `pnpm build`: tools/bundle-bin.mjs --cjs). CommonJS, so Node reads it synchronously
// and starts neither its ES module loader nor a thread pool for a single pass.
'use strict';
require('node:module').enableCompileCache?.();
require('../dist/bundle-monitor-bin.cjs');
