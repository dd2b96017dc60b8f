#!/usr/bin/env node
// Thin shim: kit's runBin closes the debugger door, guards the streams, answers --version and
// loads the built command. exitWhenDone: once the outcome is published the process must end
// with it, signal handlers still in place, so a late signal cannot turn it into 128+n (a normal
// end of the event loop removes them during Node's teardown); runBin flushes, then exits.
import module from 'node:module';
module.enableCompileCache?.();
const { runBin } = await import('@prun/kit/cli');
await runBin({
  name: 'dispatch-task-agy',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('../dist/cli.js'),
  exitWhenDone: true,
});
