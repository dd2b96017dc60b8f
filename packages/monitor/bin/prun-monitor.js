#!/usr/bin/env node
// Thin shim: everything lives in the built library so the bin starts fast and stays testable.
import module from 'node:module';
module.enableCompileCache?.();
const { main } = await import('../dist/monitor-cli.js');
await main(process.argv.slice(2));
