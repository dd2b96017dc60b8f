#!/usr/bin/env node
// Thin shim: runBin answers --version, guards the streams and catches once; the command loads lazily.
import { runBin } from '@prun/kit/cli';
await runBin({ name: 'prun-gather', manifest: new URL('../package.json', import.meta.url), load: () => import('../dist/gather-cli.js') });
