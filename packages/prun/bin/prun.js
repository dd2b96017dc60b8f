#!/usr/bin/env node
// Thin shim: kit's runBin closes the debugger door, guards the streams, answers --version and
// loads the built command; a failure that is no CliError ends in its one catch (exit 70).
import module from 'node:module';
module.enableCompileCache?.();
const { runBin } = await import('@prun/kit/cli');
await runBin({ name: 'prun', manifest: new URL('../package.json', import.meta.url), load: () => import('../dist/cli.js') });
