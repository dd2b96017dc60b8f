#!/usr/bin/env node
// Thin shim: starts the bundled bin (src/bin.ts with everything it loads, one CommonJS file built
// by `pnpm build`: tools/bundle-bin.mjs --cjs). CommonJS, so Node reads it synchronously and
// starts neither its ES module loader nor a thread pool to do so. Node's compile cache exists
// from Node 22 (module.enableCompileCache); on Node 20 loading node:module to look for it costs a
// start about a millisecond (it brings the ES module loader and the source map modules), so it
// is asked for only where it can exist.
'use strict';
if (Number(process.versions.node.split('.')[0]) >= 22) require('node:module').enableCompileCache?.();
require('../dist/bundle-bin.cjs');
