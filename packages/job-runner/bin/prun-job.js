#!/usr/bin/env node
// Thin shim: everything lives in the built library so the bin starts fast and stays testable.
import { runBin } from '@prun/kit/cli';
await runBin({
  name: 'prun-job',
  manifest: new URL('../package.json', import.meta.url),
  versionFlags: ['--version', '-V'],
  // The original exits 1 when stdout's reader goes away (cli.ts: the result block aside).
  brokenPipeExitCode: 1,
  errorLabel: 'error: ',
  // A run's detached runner (`prun-job __runner JOB_DIR ...`, started by run and resume) loads
  // its own small entry, not the command line's: it only relays between the control socket and pi.
  load: () => (process.argv[2] === '__runner' ? import('../dist/runner-main.js') : import('../dist/cli.js')),
});
