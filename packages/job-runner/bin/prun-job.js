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
  load: () => import('../dist/cli.js'),
});
