#!/usr/bin/env node
// Bundles a package's bin programs (tsc's output in dist/, after `tsc`) with everything they load
// into a few files beside them. Node 20 resolves, reads and compiles each ES module file on every
// start (it has no compile cache), so a bin that loads twenty or fifty modules spends most of its
// start-up there. One home for every bundled bin; a package's build script runs it:
//
//   node ../../tools/bundle-bin.mjs --entry bin [--entry other-bin] [--lazy quota/dist/states.js ...]
//
// --entry NAME   dist/NAME.js is a bin program; it becomes dist/bundle-NAME.js, which the shim in
//                bin/ imports. An entry must stay out of the command chunk: it awaits the command
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
//
// Output, all in dist/ so that `new URL('../package.json', import.meta.url)` still names the
// package's manifest:
//   dist/bundle-NAME.js          each entry
//   dist/bundle-edge-*.js        kit's runBin (all that --version loads)
//   dist/bundle-command-*.js     the command: every workspace module the entries load
//   dist/bundle-*-*.js           what loads only on demand (--lazy modules and the third-party
//                                code only they load), and re-export stubs of dynamic imports
// The library entries (dist/index.js, ...) stay tsc's output; only the bins use the bundle.
// tools/release/meta.mjs knows these names (isBundleOutput) so that it does not call them stale.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The prefix of every file this script writes into dist/. */
export const BUNDLE_PREFIX = 'bundle-';

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
  const workspaceDist = /[\\/]packages[\\/][a-z0-9-]+[\\/]dist[\\/]/u;
  const eagerModules = eager.map((path) => new RegExp(`[\\\\/]node_modules[\\\\/]${pathPattern(path)}[\\\\/]`, 'u'));
  const lazyModules = lazy.map((path) => new RegExp(`[\\\\/]packages[\\\\/]${pathPattern(path)}$`, 'u'));
  const entryFiles = new Set(entries);
  return [
    { name: 'edge', test: /[\\/]packages[\\/]kit[\\/]dist[\\/]cli[\\/]/u, priority: 2 },
    {
      name: 'command',
      priority: 1,
      test: (id) =>
        (workspaceDist.test(id) && !entryFiles.has(id) && !lazyModules.some((pattern) => pattern.test(id))) || eagerModules.some((pattern) => pattern.test(id)),
    },
  ];
}

export async function bundleBins({ packageDir, entries, lazy = [], eager = [], cjs = false, edge = false, codeCache = false }) {
  if (codeCache && !(cjs && edge)) throw new Error('tools/bundle-bin.mjs: --code-cache needs --cjs --edge');
  const { rolldown } = await import('rolldown');
  const dist = `${resolve(packageDir, 'dist')}${sep}`;
  if (cjs) {
    // One build per entry: the entry and every workspace module it loads but the lazy ones make one
    // file (it does not await at its top level, so its own dynamic import of the command is fine).
    for (const name of entries) {
      const entry = `${dist}${name}.js`;
      const groups = chunkGroups({ entries: edge ? [entry] : [], lazy, eager }).filter((group) => edge || group.name === 'command');
      const bundle = await rolldown({ input: { [name]: entry }, platform: 'node', external: [/^node:/u], preserveEntrySignatures: 'allow-extension', logLevel: 'warn' });
      try {
        const { output } = await bundle.write({
          dir: dist,
          format: 'cjs',
          entryFileNames: `${BUNDLE_PREFIX}[name].cjs`,
          chunkFileNames: `${BUNDLE_PREFIX}[name]-[hash].cjs`,
          codeSplitting: { includeDependenciesRecursively: false, groups },
        });
        const problem = eagerLoadProblem(output);
        if (problem) throw new Error(problem);
        if (codeCache) addCodeCache(dist, output);
      } finally {
        await bundle.close();
      }
    }
    return;
  }
  const input = Object.fromEntries(entries.map((name) => [name, `${dist}${name}.js`]));
  const bundle = await rolldown({
    input,
    platform: 'node',
    // Node's built-ins stay imports; everything else (workspace packages, zod) is bundled.
    external: [/^node:/u],
    // What includeDependenciesRecursively: false needs (rolldown would set it and warn): an entry
    // may export more than its source did; nothing imports a bin's exports.
    preserveEntrySignatures: 'allow-extension',
    logLevel: 'warn',
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
 * --code-cache: the command chunk's V8 code cache, made by a fresh `node` without NODE_OPTIONS
 * (its flags are part of what V8 checks) after running the chunk's top level, and the entry's
 * `require` of that chunk replaced by the loader. A cache the same Node then rejects fails the build.
 */
function addCodeCache(dist, output) {
  const chunks = output.filter((item) => item.type === 'chunk');
  const command = chunks.find((chunk) => chunk.name === 'command');
  if (!command) throw new Error('tools/bundle-bin.mjs: --code-cache found no command chunk');
  if (/\bimport\(/u.test(command.code)) throw new Error(`tools/bundle-bin.mjs: --code-cache: ${command.fileName} uses import(), which the loader cannot run`);
  copyFileSync(fileURLToPath(new URL('./bundle-load.cjs', import.meta.url)), join(dist, LOADER));
  const required = `require("./${command.fileName}")`;
  for (const chunk of chunks.filter((item) => item.isEntry)) {
    const file = join(dist, chunk.fileName);
    const text = readFileSync(file, 'utf8');
    if (text.split(required).length !== 2) throw new Error(`tools/bundle-bin.mjs: --code-cache: ${chunk.fileName} does not require ${command.fileName} exactly once`);
    writeFileSync(file, text.replace(required, `require("./${LOADER}")(__dirname, ${JSON.stringify(command.fileName)})`));
  }
  const chunkFile = join(dist, command.fileName);
  const make = [
    `const { readFileSync, writeFileSync } = require('node:fs');`,
    `const { createHash } = require('node:crypto');`,
    `const { compile } = require(${JSON.stringify(join(dist, LOADER))});`,
    `const file = ${JSON.stringify(chunkFile)};`,
    `const source = readFileSync(file, 'utf8');`,
    `const { script } = compile(file, source, undefined);`,
    `writeFileSync(file + '.v8cache', Buffer.concat([createHash('sha256').update(source).digest(), script.createCachedData()]));`,
  ].join('\n');
  const check = [
    `const { readFileSync } = require('node:fs');`,
    `const { compile } = require(${JSON.stringify(join(dist, LOADER))});`,
    `const file = ${JSON.stringify(chunkFile)};`,
    `const { script } = compile(file, readFileSync(file, 'utf8'), readFileSync(file + '.v8cache').subarray(32));`,
    `process.exitCode = script.cachedDataRejected ? 1 : 0;`,
  ].join('\n');
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  for (const [what, code] of [['make', make], ['check', check]]) {
    const result = spawnSync(process.execPath, ['-e', code], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`tools/bundle-bin.mjs: --code-cache: could not ${what} ${command.fileName}.v8cache: ${result.stderr.trim() || `exit ${result.status ?? result.signal}`}`);
  }
}

/**
 * What a start would load that only a dynamic import should: the entries, kit's runBin and the
 * command must import (statically) nothing but each other. A chunk outside them that they import
 * means a module reached only lazily (and what it loads, zod for instance) sits in the command
 * chunk: it must be named with --lazy.
 */
export function eagerLoadProblem(output) {
  const chunks = output.filter((item) => item.type === 'chunk');
  // rolldown's own runtime helpers (about 2 kB) get a chunk of their own when an entry and its lazy
  // chunks share them (a CommonJS bundle with two --lazy modules): loading that at start is fine.
  const runtimeOnly = (chunk) => chunk.moduleIds.length > 0 && chunk.moduleIds.every((id) => id === '\0rolldown/runtime.js');
  const eager = new Set(
    chunks.filter((chunk) => chunk.isEntry || chunk.name === 'edge' || chunk.name === 'command' || runtimeOnly(chunk)).map((chunk) => chunk.fileName),
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
    options: { entry: { type: 'string', multiple: true }, lazy: { type: 'string', multiple: true }, eager: { type: 'string', multiple: true }, cjs: { type: 'boolean' }, edge: { type: 'boolean' }, 'code-cache': { type: 'boolean' } },
    allowPositionals: true,
  });
  if (!values.entry?.length || positionals.length > 1) {
    process.stderr.write('usage: node tools/bundle-bin.mjs [PACKAGE_DIR] --entry NAME [--entry NAME ...] [--lazy PATH ...] [--eager PATH ...] [--cjs [--edge [--code-cache]]]\n');
    process.exit(2);
  }
  try {
    await bundleBins({ packageDir: positionals[0] ?? process.cwd(), entries: values.entry, lazy: values.lazy ?? [], eager: values.eager ?? [], cjs: values.cjs ?? false, edge: values.edge ?? false, codeCache: values['code-cache'] ?? false });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
