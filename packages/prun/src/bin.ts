// The bin's program: kit's runBin closes the debugger door, guards the streams, answers
// --version and loads the command; a failure that is no CliError ends in its one catch (exit 70).
// `pnpm build` bundles this file with everything it loads into CommonJS (tools/bundle-bin.mjs
// --cjs --edge --split): what --version loads, prun's own command line in a chunk of its own, and
// each fronted bin's command (`prun quota`, `prun job`, ...) in chunks that load only when it
// runs, all with their V8 code caches; the shim in bin/ requires the bundle. No top-level await
// (CommonJS has none): runBin never rejects, and the pending work keeps the process alive.
import { runBin } from '@prun/kit/cli';

void runBin({ name: 'prun', manifest: new URL('../package.json', import.meta.url), load: () => import('./cli.js') });
