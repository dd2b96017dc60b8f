// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command only when needed. `pnpm build` bundles this file with
// everything it loads into CommonJS (tools/bundle-bin.mjs --cjs --edge --split: what --version
// loads, then each command in chunks of its own with their V8 code caches); the shim in bin/
// requires the bundle. No top-level await (CommonJS has none): runBin never rejects, and the
// pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({
  name: 'prun-job',
  manifest: new URL('../package.json', import.meta.url),
  versionFlags: ['--version', '-V'],
  // The original exits 1 when stdout's reader goes away (cli.ts: the result block aside).
  brokenPipeExitCode: 1,
  errorLabel: 'error: ',
  // A run's detached runner (`prun-job __runner JOB_DIR ...`, started by run and resume) loads
  // its own small entry, not the command line's: it only relays between the control socket and pi.
  load: () => (process.argv[2] === '__runner' ? import('./runner-main.js') : import('./cli.js')),
});
