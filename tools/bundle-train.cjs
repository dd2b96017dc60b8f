'use strict';
// Preloaded (`--require`) into the bins a package's --code-cache-train workload runs
// (tools/bundle-bin.mjs): each chunk the process loads through PRUN_CODE_CACHE_DIST/bundle-load.cjs
// is loaded as that loader would (with the cache made at build, if V8 takes it), and when the
// process exits its cache is made again from what the run compiled, sealed as the loader checks
// it. A cache made right after a chunk's top level ran holds only what the top level compiled;
// every function the run then called for the first time was compiled lazily, at every start.
// Runs accumulate: the next one starts from the cache the last one wrote. Nothing of this is in
// the loader a bin runs: this file replaces the loader's export in require's cache, in the
// training processes only.
const dist = process.env.PRUN_CODE_CACHE_DIST;
if (dist) {
  const { readFileSync, renameSync, writeFileSync } = require('node:fs');
  const { join } = require('node:path');
  const Module = module.constructor;
  const loaderPath = join(dist, 'bundle-load.cjs');
  const loader = require(loaderPath);
  const { cacheFor, compile, seal } = loader;
  const made = [];
  /** The loader's loadChunk, keeping each compiled script to make its cache at exit. */
  const loadChunk = (dir, name) => {
    const file = join(dir, name);
    const known = Module._cache[file];
    if (known) return known.exports;
    const bytes = readFileSync(file);
    const source = bytes.toString('utf8');
    const { module: chunk, script } = compile(file, source, cacheFor(file, bytes));
    if (file.startsWith(join(dist, '/'))) made.push({ file, source, script });
    return chunk.exports;
  };
  Object.assign(loadChunk, loader);
  Module._cache[loaderPath].exports = loadChunk;
  process.on('exit', () => {
    for (const { file, source, script } of made) {
      const payload = script.createCachedData();
      const temp = `${file}.v8cache.${process.pid}.tmp`;
      writeFileSync(temp, Buffer.concat([seal(source, payload), payload]));
      renameSync(temp, `${file}.v8cache`);
    }
  });
}
