// The prun-gather program: kit's runBin answers --version, guards the streams and catches once;
// the command loads lazily. `pnpm build` bundles this file with everything it loads into one
// CommonJS file (tools/bundle-bin.mjs --cjs), which the shim in bin/ requires. No top-level
// await (CommonJS has none): runBin never rejects, and the pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({ name: 'prun-gather', manifest: new URL('../package.json', import.meta.url), load: () => import('./gather-cli.js') });
