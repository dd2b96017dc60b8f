// The bin's program. V8 is kept to its interpreter before anything else runs (see interpreter.ts:
// the optimizing compilers cost peak memory, no speed); then kit's runBin closes the debugger
// door, guards stdout/stderr against a closed pipe, answers a bare --version and loads the
// command only when needed. `pnpm build` bundles this file with everything it loads into
// CommonJS (tools/bundle-bin.mjs --cjs --edge --split): interpreter.ts joins this entry, kit's
// runBin is what --version loads, and the command is a chunk of its own, compiled from source
// (no code cache: V8 rejects a cache made under other flags). No top-level await (CommonJS has
// none): runBin never rejects, and the pending work keeps the process alive.
import { keepToTheInterpreter } from './interpreter.js';
import { runBin } from '@prun/kit/cli';

keepToTheInterpreter();
void runBin({ name: 'prun-snapshot-tail', manifest: new URL('../package.json', import.meta.url), load: () => import('./cli.js') });
