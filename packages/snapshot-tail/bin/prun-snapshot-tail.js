#!/usr/bin/env node
// Thin shim: kit's runBin closes the debugger door, guards stdout/stderr against a closed pipe
// and answers a bare --version before the command loads; everything else lives in the built
// library so the bin starts fast and stays testable.
import module from 'node:module';
import { runBin } from '@prun/kit/cli';

module.enableCompileCache?.();

await runBin({
  name: 'prun-snapshot-tail',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('../dist/cli.js'),
});
