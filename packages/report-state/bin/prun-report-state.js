#!/usr/bin/env node
// Thin shim: runBin answers --version, guards the streams and loads the command only when needed.
import module from 'node:module';
module.enableCompileCache?.();
const { runBin } = await import('@prun/kit/cli');
await runBin({ name: 'prun-report-state', manifest: new URL('../package.json', import.meta.url), load: () => import('../dist/cli.js') });
