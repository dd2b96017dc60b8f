// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command. exitWhenDone: once the outcome is published the process must
// end with it, signal handlers still in place, so a late signal cannot turn it into 128+n (a
// normal end of the event loop removes them during Node's teardown); runBin flushes, then exits.
// `pnpm build` bundles this file with everything it loads into CommonJS (tools/bundle-bin.mjs
// --cjs --edge); the shim in bin/ requires the bundle (README, "Start-up and speed"). No top-level
// await (CommonJS has none): runBin never rejects, and the pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

// Read by early.ts when the command loads: this process is the bin, with these arguments (its
// isolated chain may start before the rest of the command is loaded). No import of early.ts
// here: it belongs to the command chunk, which --version never loads.
(globalThis as Record<symbol, unknown>)[Symbol.for('@prun/dispatcher-agy: bin start')] = process.argv.slice(2);

void runBin({
  name: 'dispatch-task-agy',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('./cli.js'),
  exitWhenDone: true,
});
