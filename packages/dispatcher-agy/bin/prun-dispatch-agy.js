#!/usr/bin/env node
// Thin shim: starts the bundled bin (src/bin.ts with everything it loads, built by `pnpm build`:
// tools/bundle-bin.mjs), so a start reads a few files instead of about fifty.
import module from 'node:module';
module.enableCompileCache?.();
await import('../dist/bundle-bin.js');
