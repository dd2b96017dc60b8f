/**
 * prun's chunks load with V8 code caches trained at build (tools/bundle-bin.mjs --code-cache-train,
 * code-cache-training.mjs): made again after a batch ran, so they hold what a batch's driver and
 * supervisor compile, not only each chunk's top level; sealed and taken by V8 as any cache.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { repoRoot } from './helpers.js';

const DIST = join(repoRoot, 'packages', 'prun', 'dist');
const LOADER = join(DIST, 'bundle-load.cjs');

/**
 * Run `code` in a fresh node without NODE_OPTIONS (its flags are part of what V8 checks); its
 * stdout. The code writes plain text: under FORCE_COLOR (nx sets it) console.log colours numbers.
 */
function node(code: string): string {
  const env = { ...process.env };
  delete env['NODE_OPTIONS'];
  const result = spawnSync(process.execPath, ['-e', code], { env, encoding: 'utf8' });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout;
}

const chunk = (pattern: RegExp): string => readdirSync(DIST).find((name) => pattern.test(name))!;

describe("prun's code caches", () => {
  test('every chunk with a cache has one sealed for its bytes that V8 takes', () => {
    const cached = readdirSync(DIST).filter((name) => name.endsWith('.cjs.v8cache')).map((name) => join(DIST, name.slice(0, -'.v8cache'.length)));
    expect(cached.length).toBeGreaterThan(5);
    // Compiled as the loader compiles a chunk, none of them run: a chunk another one's top level
    // loaded would be in V8's own compilation cache, and a second compile would not look at its cache.
    const out = node(
      `const { readFileSync } = require('node:fs'); const { Script } = require('node:vm'); const { cacheFor } = require(${JSON.stringify(LOADER)});` +
        `for (const file of ${JSON.stringify(cached)}) { const bytes = readFileSync(file); const cachedData = cacheFor(file, bytes);` +
        ` const script = new Script(module.constructor.wrap(bytes.toString('utf8')), { filename: file, cachedData });` +
        ` console.log(file, cachedData === undefined ? 'unsealed' : script.cachedDataRejected ? 'rejected' : 'taken'); }`,
    );
    expect(out.trim().split('\n')).toEqual(cached.map((file) => `${file} taken`));
  });

  test("the batch's chunks and the supervisor's hold more than their top level compiles: the build ran a batch to train them", () => {
    for (const name of [chunk(/^bundle-cli-subcommands-.*\.cjs$/u), chunk(/^bundle-supervisor-.*\.cjs$/u)]) {
      const file = join(DIST, name);
      // What the build's first cache held: the chunk compiled from its source, its top level run.
      const topLevel = Number(
        node(`const { compile } = require(${JSON.stringify(LOADER)}); const file = ${JSON.stringify(file)};` +
          ` const { script } = compile(file, require('node:fs').readFileSync(file, 'utf8'), undefined); process.stdout.write(String(script.createCachedData().length));`),
      );
      const trained = readFileSync(`${file}.v8cache`).length - 32;
      expect(trained, name).toBeGreaterThan(topLevel * 1.2);
    }
  });
});
