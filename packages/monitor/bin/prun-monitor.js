#!/usr/bin/env node
// Thin shim: runBin answers --version, guards the streams and catches once; the command loads lazily.
import { runBin } from '@prun/kit/cli';
await runBin({ name: 'prun-monitor', manifest: new URL('../package.json', import.meta.url), load: () => import('../dist/monitor-cli.js') });
