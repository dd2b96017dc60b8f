'use strict';
// Copied by tools/bundle-bin.mjs --code-cache into a package's dist/ as bundle-load.cjs: loads a
// CommonJS bundle chunk with the V8 code cache made for it at build time (dist/<chunk>.v8cache), so
// a start deserializes the compiled chunk instead of parsing and compiling its source again.
//
// The cache is used only for the exact source it was made from and only whole: its first 32 bytes
// are the SHA-256 of that source (its UTF-8 bytes, as the file holds them) followed by the cache's
// own payload (`seal`), compared here. The check hashes the file's bytes as read, never a string
// made of them: hashing a string encodes it to UTF-8 again first, which was most of the check's
// cost (about 1.3 ms of a batch driver's start, its three chunks; the digest is the same). V8's
// own check looks at the source's length only, and a release V8 does not checksum the payload:
// one flipped byte in it crashes the process inside the deserializer instead of being rejected.
// V8 then checks its version and flags and rejects a cache another Node made
// (`cachedDataRejected`): the chunk is then compiled from its source, as `require` would. Either
// way the chunk runs once, as the module `require` would make of that file, with the same
// `require` cache entry.
const { readFileSync } = require('node:fs');
const { createHash } = require('node:crypto');
// The CommonJS loader's Module class, as `module.constructor`: the same class `require('node:module')`
// gives, without loading node:module's public face, which on Node 20 brings in the ES module
// loader and the source map modules (about 5M instructions, a millisecond, at every start).
const Module = module.constructor;
const { dirname, join } = require('node:path');
const vm = require('node:vm');

/**
 * The 32 bytes that head a cache file: SHA-256 over the source (a string is hashed as its UTF-8
 * bytes, so the file's bytes and the text read from them seal the same), then over the V8 payload.
 */
function seal(source, payload) {
  return createHash('sha256').update(source).update(payload).digest();
}

/**
 * The code cache for `source` (the chunk's bytes as read, or its text), or undefined when there is
 * none made, whole, for exactly it.
 */
function cacheFor(file, source) {
  let cache;
  try {
    cache = readFileSync(`${file}.v8cache`);
  } catch {
    return undefined;
  }
  if (cache.length <= 32) return undefined;
  const payload = cache.subarray(32);
  return cache.subarray(0, 32).equals(seal(source, payload)) ? payload : undefined;
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
  // What `require.resolve` does in a chunk `require` loaded: resolved from the chunk's own place
  // (a chunk names another workspace package's file through its package.json: bundle-bin.mjs).
  localRequire.resolve = (request) => Module._resolveFilename(request, module, false);
  script.runInThisContext().call(module.exports, module.exports, localRequire, module, file, dir);
  module.loaded = true;
  return { module, script };
}

/** `require(dir/name)`, through the chunk's code cache when it has one. */
function loadChunk(dir, name) {
  const file = join(dir, name);
  const known = Module._cache[file];
  if (known) return known.exports;
  // Read once as bytes: the seal is checked on them, and the text `require` would read (UTF-8)
  // is made of them for the compile.
  const bytes = readFileSync(file);
  const cachedData = cacheFor(file, bytes);
  return compile(file, bytes.toString('utf8'), cachedData).module.exports;
}

module.exports = loadChunk;
module.exports.compile = compile;
module.exports.cacheFor = cacheFor;
module.exports.seal = seal;
