// Entry of the batch supervisor process (see supervisor.ts). prun batch starts it as
// `node dist/bundle-supervise-main.cjs`, the CommonJS bundle `pnpm build` makes of this file
// (tools/bundle-bin.mjs), so it has no top-level await. A shim like the bins': the compile cache
// first, then kit's runBin, whose one catch makes any failure one line in the supervisors' log
// and exit 70 (the stack only when PRUN_DEBUG asks), and which ends the process once the
// supervisor is done; runBin never rejects, and the pending work keeps the process alive.
import module from 'node:module';

// Typed by hand: the pinned @types/node predates it (Node 22.1; absent on Node 20, hence `?.`).
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
void import('@prun/kit/cli').then(({ runBin }) =>
  runBin({
    name: `prun supervisor ${process.pid}`,
    manifest: new URL('../../package.json', import.meta.url),
    // The supervisor takes no arguments: nothing of argv may read as --version.
    argv: [],
    load: () => import('./supervisor.js'),
  }),
);
