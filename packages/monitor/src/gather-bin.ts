// The prun-gather program: kit's runBin answers --version, guards the streams and catches once;
// the command loads lazily. `pnpm build` bundles this file with everything it loads
// (tools/bundle-bin.mjs); the shim in bin/ starts the bundle.
import { runBin } from '@prun/kit/cli';

await runBin({ name: 'prun-gather', manifest: new URL('../package.json', import.meta.url), load: () => import('./gather-cli.js') });
