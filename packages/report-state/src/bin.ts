// The bin's program: kit's runBin answers --version, guards the streams and loads the command
// only when needed. `pnpm build` bundles this file with everything it loads into one CommonJS
// file (tools/bundle-bin.mjs --cjs; the --batch reader and zod behind it stay in a chunk of
// their own), which the shim in bin/ requires. No top-level await (CommonJS has none): runBin
// never rejects, and the pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({ name: 'prun-report-state', manifest: new URL('../package.json', import.meta.url), load: () => import('./cli.js') });
