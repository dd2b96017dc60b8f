// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command. exitWhenDone: once the outcome is published the process must
// end with it, signal handlers still in place, so a late signal cannot turn it into 128+n (a
// normal end of the event loop removes them during Node's teardown); runBin flushes, then exits.
// `pnpm build` bundles this file with everything it loads into CommonJS (tools/bundle-bin.mjs
// --cjs --edge); the shim in bin/ requires the bundle (README, "Start-up and speed"). No top-level
// await (CommonJS has none): runBin never rejects, and the pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({
  name: 'dispatch-task-agy',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('./cli.js'),
  exitWhenDone: true,
});
