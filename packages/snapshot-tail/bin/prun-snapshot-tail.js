#!/usr/bin/env node
// Thin shim: kit's runBin closes the debugger door, guards stdout/stderr against a closed pipe
// and answers a bare --version before the command loads; everything else lives in the built
// library so the bin starts fast and stays testable. V8 is kept to its interpreter before
// anything else loads (see src/interpreter.ts: the optimizing compilers cost peak memory, no speed).
import module from 'node:module';
import { keepToTheInterpreter } from '../dist/interpreter.js';

keepToTheInterpreter();
module.enableCompileCache?.();
const { runBin } = await import('@prun/kit/cli');

await runBin({
  name: 'prun-snapshot-tail',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('../dist/cli.js'),
});
