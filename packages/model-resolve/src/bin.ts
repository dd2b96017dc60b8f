// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command only when needed. `pnpm build` bundles this file with
// everything it loads into CommonJS (tools/bundle-bin.mjs --cjs --edge: what --version loads,
// then the command in a chunk of its own with its V8 code cache); the shim in bin/ requires the
// bundle. No top-level await (CommonJS has none): runBin never rejects, and the pending work
// keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({ name: 'prun-model-resolve', manifest: new URL('../package.json', import.meta.url), load: () => import('./cli.js') });
