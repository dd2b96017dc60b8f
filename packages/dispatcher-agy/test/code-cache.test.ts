/**
 * The bin's command chunk loads through dist/bundle-load.cjs with the V8 code cache made at build
 * (tools/bundle-bin.mjs --code-cache; README "Start-up and speed"): the cache is used only for the
 * exact source it was made from, and a cache V8 rejects changes nothing but the speed.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { BIN, PACKAGE_DIR } from './harness.js';

const DIST = join(PACKAGE_DIR, 'dist');
const require = createRequire(import.meta.url);
const loader = require(join(DIST, 'bundle-load.cjs')) as {
  cacheFor: (file: string, source: string) => Buffer | undefined;
};
const commandChunk = readdirSync(DIST).find((name) => /^bundle-command-.*\.cjs$/u.test(name))!;
const scratch = mkdtempSync(join(tmpdir(), 'prun-code-cache-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The package as installed (bin, dist, manifest) in a scratch directory, to change its files. */
function packageCopy(name: string): string {
  const dir = join(scratch, name);
  for (const part of ['bin', 'dist', 'package.json']) cpSync(join(PACKAGE_DIR, part), join(dir, part), { recursive: true });
  return dir;
}

function help(bin: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the command chunk and its code cache', () => {
  test('the entry requires the command chunk through the loader, and the build made its cache', () => {
    expect(readFileSync(join(DIST, 'bundle-bin.cjs'), 'utf8')).toContain(`require("./bundle-load.cjs")(__dirname, "${commandChunk}")`);
    const file = join(DIST, commandChunk);
    expect(loader.cacheFor(file, readFileSync(file, 'utf8'))).toBeInstanceOf(Buffer);
  });

  test('a cache is not used for a source that differs, even with the same length (all V8 itself compares)', () => {
    const file = join(DIST, commandChunk);
    const source = readFileSync(file, 'utf8');
    const at = source.indexOf('dispatch-task-agy');
    const changed = `${source.slice(0, at)}Dispatch-task-agy${source.slice(at + 'dispatch-task-agy'.length)}`;
    expect(changed.length).toBe(source.length);
    expect(loader.cacheFor(file, changed)).toBeUndefined();
  });

  test('with the cache missing, made for another source, or rejected by V8, the bin behaves the same', () => {
    const expected = help(BIN);
    expect(expected.status).toBe(0);
    expect(expected.stdout).toContain('prun-dispatch-agy');
    const cases: [string, (cache: string, chunk: string) => void][] = [
      ['missing', (cache) => rmSync(cache)],
      // The right digest, then bytes V8 must reject (a cache another Node made looks like this to it).
      ['rejected', (cache) => writeFileSync(cache, Buffer.concat([readFileSync(cache).subarray(0, 32), Buffer.alloc(4096, 7)]))],
      // A source changed after the build: its old cache is not even offered to V8.
      ['stale', (_cache, chunk) => writeFileSync(chunk, `${readFileSync(chunk, 'utf8')}\n// changed after the build\n`)],
    ];
    for (const [name, spoil] of cases) {
      const dir = packageCopy(name);
      spoil(join(dir, 'dist', `${commandChunk}.v8cache`), join(dir, 'dist', commandChunk));
      const got = help(join(dir, 'bin', 'prun-dispatch-agy.js'));
      expect({ name, ...got }).toEqual({ name, ...expected });
    }
  });
});
