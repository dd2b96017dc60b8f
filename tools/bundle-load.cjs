'use strict';
// Copied by tools/bundle-bin.mjs --code-cache into a package's dist/ as bundle-load.cjs: loads a
// CommonJS bundle chunk with the V8 code cache made for it at build time (dist/<chunk>.v8cache), so
// a start deserializes the compiled chunk instead of parsing and compiling its source again.
//
// The cache is used only for the exact source it was made from: its first 32 bytes are the
// SHA-256 of that source, compared here (V8's own check looks at the source's length only). V8
// then checks its version and flags and rejects a cache another Node made (`cachedDataRejected`):
// the chunk is then compiled from its source, as `require` would. Either way the chunk runs once,
// as the module `require` would make of that file, with the same `require` cache entry.
const { readFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
const Module = require('node:module');
const { dirname, join } = require('node:path');
const vm = require('node:vm');

/** The code cache for `source`, or undefined when there is none made for exactly it. */
function cacheFor(file, source) {
  let cache;
  try {
    cache = readFileSync(`${file}.v8cache`);
  } catch {
    return undefined;
  }
  const digest = createHash('sha256').update(source).digest();
  return cache.length > 32 && cache.subarray(0, 32).equals(digest) ? cache.subarray(32) : undefined;
}

/** Compile and run `file` as a CommonJS module (with `cachedData` when given); its module. */
function compile(file, source, cachedData) {
  const dir = dirname(file);
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData });
  const module = new Module(file, null);
  module.filename = file;
  module.paths = Module._nodeModulePaths(dir);
  Module._cache[file] = module;
  const localRequire = (id) => module.require(id.startsWith('./') ? join(dir, id) : id);
  script.runInThisContext().call(module.exports, module.exports, localRequire, module, file, dir);
  module.loaded = true;
  return { module, script };
}

/** `require(dir/name)`, through the chunk's code cache when it has one. */
function loadChunk(dir, name) {
  const file = join(dir, name);
  const known = Module._cache[file];
  if (known) return known.exports;
  const source = readFileSync(file, 'utf8');
  return compile(file, source, cacheFor(file, source)).module.exports;
}

module.exports = loadChunk;
module.exports.compile = compile;
module.exports.cacheFor = cacheFor;
