#!/usr/bin/env node
// Thin shim: everything lives in the built library so the bin starts fast and stays testable.
import { runBin } from '@prun/kit/cli';
await runBin({
  name: 'prun-job',
  manifest: new URL('../package.json', import.meta.url),
  versionFlags: ['--version', '-V'],
  load: () => import('../dist/cli.js'),
});
