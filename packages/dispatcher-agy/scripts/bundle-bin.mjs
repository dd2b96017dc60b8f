// Bundles the bin (dist/bin.js, after tsc) with everything it loads into a few files beside it:
// Node 20 resolves, reads and compiles each ES module file on every start (it has no compile
// cache), and a dispatch used to load about 50 of them. Output, all in dist/ so that
// `new URL('../package.json', import.meta.url)` still names this package's manifest:
//   dist/bundle-bin.js           the entry
//   dist/bundle-edge-*.js        kit's runBin (all that --version loads)
//   dist/bundle-command-*.js     the whole dispatch: cli.js, run.js and every workspace module
//   dist/bundle-*-*.js           what loads only on demand (quota's snapshot schemas and zod, its
//                                refresh and execa), and a few re-export stubs of the dynamic imports
// The library entries (dist/index.js, dist/cli.js, ...) stay tsc's output; only the bin uses this.
import { rolldown } from 'rolldown';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const bundle = await rolldown({
  input: { bin: `${dist}bin.js` },
  platform: 'node',
  // Node's built-ins stay imports; everything else (workspace packages, zod) is bundled.
  external: [/^node:/],
  logLevel: 'warn',
});
await bundle.write({
  dir: dist,
  format: 'esm',
  entryFileNames: 'bundle-[name].js',
  chunkFileNames: 'bundle-[name]-[hash].js',
  codeSplitting: {
    includeDependenciesRecursively: false,
    groups: [
      // kit's runBin on its own: `--version` (answered by it) reads only this and the entry.
      { name: 'edge', test: /[\\/]packages[\\/]kit[\\/]dist[\\/]cli[\\/]/, priority: 2 },
      {
        // Every workspace module in one chunk, but the entry and quota's snapshot schemas and
        // refresh. Those (and zod and execa, which only they load) stay behind their dynamic
        // imports, in chunks of their own. The entry stays out because it awaits the command at
        // its top level: in the same chunk, that import would wait for itself.
        name: 'command',
        priority: 1,
        test: (id) =>
          /[\\/]packages[\\/][a-z-]+[\\/]dist[\\/]/.test(id) &&
          !/[\\/]quota[\\/]dist[\\/](states|refresh)\.js$/.test(id) &&
          id !== `${dist}bin.js`,
      },
    ],
  },
});
await bundle.close();
