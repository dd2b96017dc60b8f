// Entry of the batch supervisor process (`node dist/supervise/main.js`, started by prun batch;
// see supervisor.ts). A shim like the bins': the compile cache first, then the code.
import module from 'node:module';

// Typed by hand: the pinned @types/node predates it (Node 22.1; absent on Node 20, hence `?.`).
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const { main } = await import('./supervisor.js');
main();
