#!/usr/bin/env node
// Bundles a package's bin programs (tsc's output in dist/, after `tsc`) with everything they load
// into a few files beside them. Node 20 resolves, reads and compiles each ES module file on every
// start (it has no compile cache), so a bin that loads twenty or fifty modules spends most of its
// start-up there. One home for every bundled bin; a package's build script runs it:
//
//   node ../../tools/bundle-bin.mjs --entry bin [--entry other-bin] [--lazy quota/dist/states.js ...]
//
// --entry NAME   dist/NAME.js is a bin program; it becomes dist/bundle-NAME.js, which the shim in
//                bin/ imports (NAME may name a subfolder: supervise/main is bundle-supervise-main). An entry must stay out of the command chunk: it awaits the command
//                at its top level, and in the same chunk that import would wait for itself.
// --lazy PATH    a workspace module (packages/PATH) that loads only behind a dynamic import: it
//                stays in a chunk of its own, with what only it loads, instead of the command's.
// --eager PATH   third-party code (node_modules/PATH, e.g. zod/v4/mini) the command is meant to
//                load at every start: it joins the command chunk. Without it, third-party code the
//                command reaches statically fails the start-up check below, as a module that should
//                have been behind a dynamic import (--lazy) would.
// --cjs          each entry becomes one CommonJS file, dist/bundle-NAME.cjs, with everything it
//                loads but the --lazy modules (chunks of their own, required on demand), kit's
//                runBin included. A CommonJS bin (bin/*.cjs) is read and compiled synchronously:
//                Node starts neither its ES module loader nor the thread pool that loader reads
//                files through, which is most of what a short-lived bin spends over `node -e ''`.
//                The entry must not await at its top level (CommonJS has no top-level await).
// --edge         (with --cjs) kit's runBin and the command stay two chunks, as without --cjs:
//                dist/bundle-edge-*.cjs (all that --version loads) and dist/bundle-command-*.cjs,
//                which the entry requires only when its dynamic import of the command runs.
// --code-cache   (with --cjs --edge) the command chunk gets a V8 code cache made now by this Node
//                (dist/bundle-command-*.cjs.v8cache, after running the chunk's top level in a
//                child process), and the entry loads the chunk through dist/bundle-load.cjs
//                (tools/bundle-load.cjs), which uses the cache only for the exact source it was
//                made from and when V8 accepts it (same version and flags), else compiles the
//                source as require would. The command chunk must not use import().
// --code-cache-train FILE (with --code-cache) once every entry is built: `node FILE` runs the
//                package's bins on a small workload of their own (prun: two batches of fake-agy
//                units and a status), each with NODE_OPTIONS=--require=$PRUN_CODE_CACHE_TRAIN
//                (tools/bundle-train.cjs); every chunk those processes load gets its cache made
//                again when they exit, holding what the run compiled, not only the chunk's top
//                level (a 20-unit batch's driver about 9% fewer instructions; the caches about 1.5
//                times the size). A cache of every function (compiled with --no-lazy) was 3.5 times
//                the size and cost more to load than it saved. The caches are checked again after.
// --split        (with --cjs --edge) no catch-all command chunk: each command the entry imports
//                dynamically (its CLI; job-runner's entry: its CLI and its runner) makes one chunk
//                with everything it loads statically that no other of them does, third-party code
//                included (no --eager needed); what they share, and whatever loads only behind a
//                further dynamic import (`prun`'s subcommands, other packages' commands; each of
//                job-runner's commands), is left to rolldown's own splitting: a chunk per set of
//                dynamic imports that loads it, so a command loads no other command's code. With
//                --code-cache every chunk but the entry and the edge gets its cache, and every
//                chunk requires the others through the loader.
// --subcommands-together (with --split) a command that routes to subcommands of its own package
//                (prun's cli.js: each of prun's own commands is a module of dist/ it imports
//                dynamically) gets one more chunk with what those subcommands load statically beyond
//                the command: they share most of it, and a chunk per set of subcommands sharing each
//                module costs each start a read, a seal check and a compile per chunk. What they
//                load only behind a further dynamic import (prun's live panel) keeps its own chunk.
//
// Every bundled module keeps its own `import.meta.url`: the URL of its tsc file (dist/...), which
// stays beside the bundle, so `new URL('../../bin/x.js', import.meta.url)` in dist/commands/ or a
// `../package.json` of another workspace package (found through that package's own name, one of
// the bundling package's dependencies) names what it named before it was bundled.
//
// Output, all in dist/ (.cjs with --cjs, each chunk's cache beside it with --code-cache):
//   dist/bundle-NAME.js          each entry
//   dist/bundle-edge-*.js        kit's runBin (all that --version loads)
//   dist/bundle-command-*.js     the command: every workspace module the entries load
//   dist/bundle-*-*.js           what loads only on demand (--lazy modules and the third-party
//                                code only they load), and re-export stubs of dynamic imports;
//                                with --split, each command (named after its module) and the
//                                chunks rolldown splits off
// The library entries (dist/index.js, ...) stay tsc's output; only the bins use the bundle.
// tools/release/meta.mjs knows these names (isBundleOutput) so that it does not call them stale.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The prefix of every file this script writes into dist/. */
export const BUNDLE_PREFIX = 'bundle-';

/** A workspace package's declarations of its bins (packages/NAME/dist/spec.js, kit/spec's shape). */
const DECLARATION = /[\\/]packages[\\/][a-z0-9-]+[\\/]dist[\\/]spec\.js$/u;

/** A module of a workspace package's tsc output (packages/NAME/dist/...). */
const WORKSPACE_DIST = /[\\/]packages[\\/][a-z0-9-]+[\\/]dist[\\/]/u;

/** Whether `relative` (a path inside dist/) is this script's output. */
export function isBundleOutput(relative) {
  // A chunk, or a chunk's V8 code cache (--code-cache).
  return relative.startsWith(BUNDLE_PREFIX) && !relative.includes('/') && /\.c?js(\.v8cache)?$/u.test(relative);
}

/** Whether a package's manifest builds its bins with this script. */
export function bundlesBins(manifest) {
  return /\btools\/bundle-bin\.mjs\b/u.test(manifest.scripts?.build ?? '');
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/gu, '\\$&');
/** A path written with `/` as a pattern that matches it with either separator. */
const pathPattern = (path) => path.split('/').map(escape).join('[\\\\/]');

/** The chunk groups: kit's runBin alone, then every workspace module but the entries and the lazy ones. */
export function chunkGroups({ entries, lazy, eager = [] }) {
  const eagerModules = eager.map((path) => new RegExp(`[\\\\/]node_modules[\\\\/]${pathPattern(path)}[\\\\/]`, 'u'));
  const lazyModules = lazy.map((path) => new RegExp(`[\\\\/]packages[\\\\/]${pathPattern(path)}$`, 'u'));
  const entryFiles = new Set(entries);
  return [
    { name: 'edge', test: /[\\/]packages[\\/]kit[\\/]dist[\\/]cli[\\/]/u, priority: 2 },
    {
      name: 'command',
      priority: 1,
      test: (id) =>
        (WORKSPACE_DIST.test(id) && !entryFiles.has(id) && !lazyModules.some((pattern) => pattern.test(id))) || eagerModules.some((pattern) => pattern.test(id)),
    },
  ];
}

/** An entry's name in its output file: `supervise/main` (dist/supervise/main.js) is bundle-supervise-main. */
const outputName = (entry) => entry.replaceAll('/', '-');

/** The nearest folder at or above `file`'s that holds a package.json, and that manifest. */
function owningPackage(file) {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) return { dir, manifest: JSON.parse(readFileSync(manifest, 'utf8')) };
    if (dirname(dir) === dir) throw new Error(`tools/bundle-bin.mjs: no package.json above ${file}`);
  }
}

/**
 * A rolldown plugin that gives every workspace module its own `import.meta.url` back: the URL of
 * its tsc file, which stays in dist/ beside the bundle. A module of the bundling package is named
 * relative to the bundle (both in its dist/); one of another workspace package through that
 * package's name (`require.resolve('@prun/x/package.json')`, wherever npm or pnpm put it), which
 * only a CommonJS bundle can do and only for one of the bundling package's dependencies. The
 * bundle's own `require` resolves it, as `createRequire(__filename)` would, without loading
 * node:module (on Node 20 its public face brings in the ES module loader at every start).
 */
function ownImportMetaUrl({ packageDir, dist, cjs }) {
  const own = owningPackage(join(dist, 'x.js'));
  const dependencies = new Set(Object.keys(own.manifest.dependencies ?? {}));
  return {
    name: 'prun-own-import-meta-url',
    transform(code, id) {
      if (!WORKSPACE_DIST.test(id) || !code.includes('import.meta.url')) return null;
      let url;
      if (id.startsWith(dist)) {
        url = `new URL(${JSON.stringify(`./${relative(dist, id).split(sep).join('/')}`)}, import.meta.url).href`;
      } else {
        const { dir, manifest } = owningPackage(id);
        if (!cjs) throw new Error(`tools/bundle-bin.mjs: ${id} uses import.meta.url: an ES module bundle cannot name another package's file (use --cjs)`);
        if (!dependencies.has(manifest.name)) throw new Error(`tools/bundle-bin.mjs: ${id} uses import.meta.url, but ${manifest.name} is no dependency of ${packageDir}`);
        const inPackage = relative(dir, id).split(sep).join('/');
        url =
          `require("node:url").pathToFileURL(require("node:path").join(require("node:path").dirname(` +
          `require.resolve(${JSON.stringify(`${manifest.name}/package.json`)})), ${JSON.stringify(inPackage)})).href`;
      }
      return { code: code.replaceAll('import.meta.url', `(${url})`) };
    },
  };
}

/**
 * The module graph rolldown built (a plugin records it once the build is done), and from it the
 * --split groups: each command an entry imports dynamically gets one chunk with everything it
 * loads statically that no other of the entry's commands loads; what several of them share, and
 * what loads only behind a further dynamic import, is left to rolldown's own splitting.
 */
function moduleGraph() {
  const modules = new Map();
  const plugin = {
    name: 'prun-module-graph',
    buildEnd() {
      modules.clear();
      for (const id of this.getModuleIds()) {
        const info = this.getModuleInfo(id);
        if (info) modules.set(id, { imported: info.importedIds, dynamic: info.dynamicallyImportedIds });
      }
    },
  };
  const closure = (root) => {
    const seen = new Set([root]);
    for (const id of seen) for (const next of modules.get(id)?.imported ?? []) seen.add(next);
    return seen;
  };
  // rolldown builds when the bundle is written, so the groups read the graph only once chunking
  // asks: one group whose name function names each module's command (null: rolldown's own split).
  const commandGroups = (entry, { dist = null } = {}) => {
    let commandOf = null;
    const name = (id) => {
      if (commandOf === null) {
        const roots = [...new Set(modules.get(entry)?.dynamic ?? [])];
        const closures = roots.map((root) => closure(root));
        // What the entry loads itself (snapshot-tail's interpreter.js) stays with the entry.
        const atStart = closure(entry);
        const commandName = (root) => root.split(/[\\/]/u).pop().replace(/\.js$/u, '');
        // --subcommands-together (`dist`): a command that routes to subcommands of its own package
        // (modules of dist/ that it, or what it loads statically, imports dynamically) gets one more chunk, NAME-subcommands, with
        // everything those subcommands load statically beyond the command itself and its other
        // dynamic imports. They share most
        // of their code, and every chunk costs a start a read, a seal check and a compile: left to
        // rolldown, that code would be a chunk per set of subcommands sharing each module.
        // The packages' declarations (each package's dist/spec.js, what `prun help` and completion
        // read of every fronted tool) and what they load make one chunk of their own, so that help
        // loads neither the subcommands nor a chunk per declaration.
        const together = new Map();
        if (dist !== null) {
          roots.forEach((root, index) => {
            const loaded = [...new Set([...closures[index]].flatMap((module) => modules.get(module)?.dynamic ?? []))];
            for (const declaration of loaded.filter((module) => DECLARATION.test(module))) {
              for (const module of closure(declaration)) if (!closures[index].has(module)) together.set(module, `${commandName(root)}-declarations`);
            }
            for (const sub of loaded.filter((module) => module.startsWith(dist))) {
              for (const module of closure(sub)) {
                if (!closures[index].has(module) && !together.has(module)) together.set(module, `${commandName(root)}-subcommands`);
              }
            }
          });
        }
        commandOf = (module) => {
          if (atStart.has(module)) return null;
          const holders = roots.filter((_, index) => closures[index].has(module));
          if (holders.length === 1) return commandName(holders[0]);
          return holders.length === 0 ? (together.get(module) ?? null) : null;
        };
      }
      return commandOf(id);
    };
    return [{ name, debugName: 'command', priority: 1 }];
  };
  return { plugin, commandGroups };
}

export async function bundleBins({ packageDir, entries, lazy = [], eager = [], cjs = false, edge = false, codeCache = false, codeCacheTrain = null, split = false, subcommandsTogether = false }) {
  if (codeCache && !(cjs && edge)) throw new Error('tools/bundle-bin.mjs: --code-cache needs --cjs --edge');
  if (codeCacheTrain !== null && !codeCache) throw new Error('tools/bundle-bin.mjs: --code-cache-train needs --code-cache');
  if (split && !(cjs && edge)) throw new Error('tools/bundle-bin.mjs: --split needs --cjs --edge');
  if (subcommandsTogether && !split) throw new Error('tools/bundle-bin.mjs: --subcommands-together needs --split');
  const { rolldown } = await import('rolldown');
  const dist = `${resolve(packageDir, 'dist')}${sep}`;
  const graph = moduleGraph();
  const plugins = [ownImportMetaUrl({ packageDir, dist, cjs }), graph.plugin];
  if (cjs) {
    const cachedChunks = [];
    // One build per entry: the entry and every workspace module it loads but the lazy ones make one
    // file (it does not await at its top level, so its own dynamic import of the command is fine).
    for (const name of entries) {
      const entry = `${dist}${name}.js`;
      const bundle = await rolldown({ input: { [outputName(name)]: entry }, platform: 'node', external: [/^node:/u], preserveEntrySignatures: 'allow-extension', logLevel: 'warn', plugins });
      try {
        // --split's groups read the module graph, which the build finds when the bundle is written.
        const groups = split
          ? [...chunkGroups({ entries: [entry], lazy, eager }).filter((group) => group.name === 'edge'), ...graph.commandGroups(entry, { dist: subcommandsTogether ? dist : null })]
          : chunkGroups({ entries: edge ? [entry] : [], lazy, eager }).filter((group) => edge || group.name === 'command');
        const { output } = await bundle.write({
          dir: dist,
          format: 'cjs',
          entryFileNames: `${BUNDLE_PREFIX}[name].cjs`,
          chunkFileNames: `${BUNDLE_PREFIX}[name]-[hash].cjs`,
          codeSplitting: { includeDependenciesRecursively: false, groups },
        });
        const problem = eagerLoadProblem(output, { split });
        if (problem) throw new Error(problem);
        if (codeCache) cachedChunks.push(...addCodeCache(dist, output, { split }));
      } finally {
        await bundle.close();
      }
    }
    if (codeCacheTrain !== null) trainCodeCaches(dist, resolve(packageDir, codeCacheTrain), cachedChunks);
    return;
  }
  const input = Object.fromEntries(entries.map((name) => [outputName(name), `${dist}${name}.js`]));
  const bundle = await rolldown({
    input,
    platform: 'node',
    // Node's built-ins stay imports; everything else (workspace packages, zod) is bundled.
    external: [/^node:/u],
    // What includeDependenciesRecursively: false needs (rolldown would set it and warn): an entry
    // may export more than its source did; nothing imports a bin's exports.
    preserveEntrySignatures: 'allow-extension',
    logLevel: 'warn',
    plugins,
  });
  try {
    const { output } = await bundle.write({
      dir: dist,
      format: 'esm',
      entryFileNames: `${BUNDLE_PREFIX}[name].js`,
      chunkFileNames: `${BUNDLE_PREFIX}[name]-[hash].js`,
      codeSplitting: {
        includeDependenciesRecursively: false,
        groups: chunkGroups({ entries: Object.values(input), lazy, eager }),
      },
    });
    const problem = eagerLoadProblem(output);
    if (problem) throw new Error(problem);
  } finally {
    await bundle.close();
  }
}

/** The loader every --code-cache entry requires its command chunk through (tools/bundle-load.cjs). */
const LOADER = `${BUNDLE_PREFIX}load.cjs`;

/**
 * --code-cache: the command chunk's V8 code cache (with --split, every chunk's but the entry's and
 * the edge's), made by a fresh `node` without NODE_OPTIONS (its flags are part of what V8 checks)
 * after running the chunk's top level, and every `require` of such a chunk replaced by the loader.
 * A cache the same Node then rejects fails the build.
 */
function addCodeCache(dist, output, { split = false } = {}) {
  const chunks = output.filter((item) => item.type === 'chunk');
  const cached = split
    ? chunks.filter((chunk) => !chunk.isEntry && chunk.name !== 'edge' && !chunk.moduleIds.every((id) => id === '\0rolldown/runtime.js'))
    : chunks.filter((chunk) => chunk.name === 'command');
  if (cached.length === 0) throw new Error('tools/bundle-bin.mjs: --code-cache found no command chunk');
  for (const chunk of cached) {
    if (/\bimport\(/u.test(chunk.code)) throw new Error(`tools/bundle-bin.mjs: --code-cache: ${chunk.fileName} uses import(), which the loader cannot run`);
  }
  copyFileSync(fileURLToPath(new URL('./bundle-load.cjs', import.meta.url)), join(dist, LOADER));
  for (const chunk of chunks) {
    const file = join(dist, chunk.fileName);
    let text = readFileSync(file, 'utf8');
    for (const target of cached) {
      const required = `require("./${target.fileName}")`;
      const count = text.split(required).length - 1;
      if (!split && chunk.isEntry && count !== 1) throw new Error(`tools/bundle-bin.mjs: --code-cache: ${chunk.fileName} does not require ${target.fileName} exactly once`);
      if (count > 0) text = text.replaceAll(required, `require("./${LOADER}")(__dirname, ${JSON.stringify(target.fileName)})`);
    }
    writeFileSync(file, text);
  }
  // Dependencies first, so that each chunk is compiled (and run) once, by the maker itself, before
  // another's top level requires it: its cache then holds what running its top level compiled.
  const order = [];
  const seen = new Set();
  const visit = (chunk) => {
    if (seen.has(chunk)) return;
    seen.add(chunk);
    for (const file of chunk.imports) {
      const imported = cached.find((other) => other.fileName === file);
      if (imported) visit(imported);
    }
    order.push(chunk);
  };
  for (const chunk of cached) visit(chunk);
  const files = order.map((chunk) => join(dist, chunk.fileName));
  makeCodeCaches(dist, files);
  return files;
}

/** Node's environment for making and checking caches: without NODE_OPTIONS, whose flags are part of what V8 checks. */
function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}

/** The check that every one of these chunks' caches is sealed for it and taken by V8, run in a fresh `node`. */
function checkCodeCachesCode(dist, chunkFiles) {
  return [
    `const { readFileSync } = require('node:fs');`,
    `const { compile, cacheFor } = require(${JSON.stringify(join(dist, LOADER))});`,
    `for (const file of ${JSON.stringify(chunkFiles)}) {`,
    `  const bytes = readFileSync(file);`,
    `  const cachedData = cacheFor(file, bytes);`,
    `  const { script } = compile(file, bytes.toString('utf8'), cachedData);`,
    `  if (cachedData === undefined || script.cachedDataRejected) throw new Error(file + '.v8cache: rejected');`,
    `}`,
  ].join('\n');
}

/**
 * --code-cache-train: run the package's workload (`node FILE`, told where the trainer preload is
 * and which dist/ it trains), which remakes the caches of the chunks its bins load, then check
 * every cache again. The workload failing fails the build.
 */
function trainCodeCaches(dist, workload, chunkFiles) {
  const trainer = fileURLToPath(new URL('./bundle-train.cjs', import.meta.url));
  const env = cleanEnv({ PRUN_CODE_CACHE_TRAIN: trainer, PRUN_CODE_CACHE_DIST: dist.replace(/[\\/]$/u, '') });
  const trained = spawnSync(process.execPath, [workload], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (trained.status !== 0) throw new Error(`tools/bundle-bin.mjs: --code-cache-train: ${workload} failed: ${trained.stderr.trim() || `exit ${trained.status ?? trained.signal}`}`);
  const checked = spawnSync(process.execPath, ['-e', checkCodeCachesCode(dist, chunkFiles)], { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (checked.status !== 0) throw new Error(`tools/bundle-bin.mjs: --code-cache-train: the trained caches: ${checked.stderr.trim() || `exit ${checked.status ?? checked.signal}`}`);
}

/** Make, then check, the V8 code caches of these chunks (see addCodeCache), in two fresh processes. */
function makeCodeCaches(dist, chunkFiles) {
  const make = [
    `const { readFileSync, writeFileSync } = require('node:fs');`,
    `const { compile, seal } = require(${JSON.stringify(join(dist, LOADER))});`,
    `for (const file of ${JSON.stringify(chunkFiles)}) {`,
    `  const source = readFileSync(file, 'utf8');`,
    `  const { script } = compile(file, source, undefined);`,
    `  const payload = script.createCachedData();`,
    `  writeFileSync(file + '.v8cache', Buffer.concat([seal(source, payload), payload]));`,
    `}`,
  ].join('\n');
  const check = checkCodeCachesCode(dist, chunkFiles);
  const env = cleanEnv();
  for (const [what, code] of [['make', make], ['check', check]]) {
    const result = spawnSync(process.execPath, ['-e', code], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`tools/bundle-bin.mjs: --code-cache: could not ${what} the code caches: ${result.stderr.trim() || `exit ${result.status ?? result.signal}`}`);
  }
}

/**
 * What a start would load that only a dynamic import should: the entries, kit's runBin and the
 * command must import (statically) nothing but each other. A chunk outside them that they import
 * means a module reached only lazily (and what it loads, zod for instance) sits in the command
 * chunk: it must be named with --lazy.
 */
export function eagerLoadProblem(output, { split = false } = {}) {
  const chunks = output.filter((item) => item.type === 'chunk');
  // rolldown's own runtime helpers (about 2 kB) get a chunk of their own when an entry and its lazy
  // chunks share them (a CommonJS bundle with two --lazy modules): loading that at start is fine.
  const runtimeOnly = (chunk) => chunk.moduleIds.length > 0 && chunk.moduleIds.every((id) => id === '\0rolldown/runtime.js');
  const eager = new Set(
    // With --split only the entries and the edge load at start; every other chunk loads on demand.
    chunks.filter((chunk) => chunk.isEntry || chunk.name === 'edge' || (!split && chunk.name === 'command') || runtimeOnly(chunk)).map((chunk) => chunk.fileName),
  );
  for (const chunk of chunks) {
    if (!eager.has(chunk.fileName)) continue;
    const lazyOnes = chunk.imports.filter((file) => !eager.has(file) && chunks.some((other) => other.fileName === file));
    if (lazyOnes.length === 0) continue;
    const held = chunks.filter((other) => lazyOnes.includes(other.fileName)).flatMap((other) => other.moduleIds);
    const shown = held.slice(0, 3).map((id) => id.replace(/^.*(node_modules|packages)[\\/]/u, ''));
    return (
      `tools/bundle-bin.mjs: ${chunk.fileName} loads ${lazyOnes.join(', ')} at start (${shown.join(', ')}${held.length > 3 ? ', ...' : ''}): ` +
      'name the workspace modules that only a dynamic import reaches with --lazy'
    );
  }
  return null;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values, positionals } = parseArgs({
    options: { entry: { type: 'string', multiple: true }, lazy: { type: 'string', multiple: true }, eager: { type: 'string', multiple: true }, cjs: { type: 'boolean' }, edge: { type: 'boolean' }, 'code-cache': { type: 'boolean' }, 'code-cache-train': { type: 'string' }, split: { type: 'boolean' }, 'subcommands-together': { type: 'boolean' } },
    allowPositionals: true,
  });
  if (!values.entry?.length || positionals.length > 1) {
    process.stderr.write('usage: node tools/bundle-bin.mjs [PACKAGE_DIR] --entry NAME [--entry NAME ...] [--lazy PATH ...] [--eager PATH ...] [--cjs [--edge [--split [--subcommands-together]] [--code-cache [--code-cache-train FILE]]]]\n');
    process.exit(2);
  }
  try {
    await bundleBins({ packageDir: positionals[0] ?? process.cwd(), entries: values.entry, lazy: values.lazy ?? [], eager: values.eager ?? [], cjs: values.cjs ?? false, edge: values.edge ?? false, codeCache: values['code-cache'] ?? false, codeCacheTrain: values['code-cache-train'] ?? null, split: values.split ?? false, subcommandsTogether: values['subcommands-together'] ?? false });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
