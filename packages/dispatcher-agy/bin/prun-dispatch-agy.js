#!/usr/bin/env node
// Thin shim: kit's runBin closes the debugger door, guards the streams, answers --version and
// loads the built command.
import module from 'node:module';
module.enableCompileCache?.();
const { runBin } = await import('@prun/kit/cli');
await runBin({
  name: 'dispatch-task-agy',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('../dist/cli.js'),
});
