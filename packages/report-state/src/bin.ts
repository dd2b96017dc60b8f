// The bin's program: kit's runBin answers --version, guards the streams and loads the command
// only when needed. `pnpm build` bundles this file with everything it loads
// (tools/bundle-bin.mjs); the shim in bin/ starts the bundle (README, "Start-up and speed").
import { runBin } from '@prun/kit/cli';

await runBin({ name: 'prun-report-state', manifest: new URL('../package.json', import.meta.url), load: () => import('./cli.js') });
