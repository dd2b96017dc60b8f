// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command. exitWhenDone: once the outcome is published the process must
// end with it, signal handlers still in place, so a late signal cannot turn it into 128+n (a
// normal end of the event loop removes them during Node's teardown); runBin flushes, then exits.
// `pnpm build` bundles this file with everything it loads (tools/bundle-bin.mjs); the shim in
// bin/ starts the bundle (README, "Start-up and speed").
import { runBin } from '@prun/kit/cli';

await runBin({
  name: 'dispatch-task-agy',
  manifest: new URL('../package.json', import.meta.url),
  load: () => import('./cli.js'),
  exitWhenDone: true,
});
