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
  cacheFor: (file: string, source: string | Buffer) => Buffer | undefined;
  seal: (source: string | Buffer, payload: Buffer) => Buffer;
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

  test("the seal covers the chunk's bytes as read: its text seals the same, and one byte changed in the bytes is refused", () => {
    const file = join(DIST, commandChunk);
    const bytes = readFileSync(file);
    const payload = loader.cacheFor(file, bytes);
    expect(payload).toBeInstanceOf(Buffer);
    expect(loader.cacheFor(file, readFileSync(file, 'utf8'))!.equals(payload!)).toBe(true);
    for (const at of [0, bytes.length >> 1, bytes.length - 1]) {
      const changed = Buffer.from(bytes);
      changed[at] = changed[at]! ^ 0x01;
      expect(loader.cacheFor(file, changed), `byte ${at}`).toBeUndefined();
    }
  });

  test('a chunk changed on disk after the build, keeping its length, runs as changed (its old cache would run the old code)', () => {
    const dir = packageCopy('same-length');
    const chunk = join(dir, 'dist', commandChunk);
    const source = readFileSync(chunk, 'utf8');
    // Set at the chunk's top level, which its cache holds compiled: an offered cache would print the old prefix.
    const prefix = 'const MESSAGE_PREFIX = "dispatch-task-agy: ";';
    expect(source).toContain(prefix);
    writeFileSync(chunk, source.replace(prefix, prefix.replace('"dispatch', '"Dispatch')));
    const run = spawnSync(process.execPath, [join(dir, 'bin', 'prun-dispatch-agy.js'), `--prompt-file=${join(scratch, 'no-such-prompt.md')}`, `--result-file=${join(scratch, 'r.md')}`, '--unit-id=u'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 2, stderr: `Dispatch-task-agy: prompt file not found: ${join(scratch, 'no-such-prompt.md')}\n` });
  });

  test('with the cache missing, made for another source, or rejected by V8, the bin behaves the same', () => {
    const expected = help(BIN);
    expect(expected.status).toBe(0);
    expect(expected.stdout).toContain('prun-dispatch-agy');
    const cases: [string, (cache: string, chunk: string) => void][] = [
      ['missing', (cache) => rmSync(cache)],
      // Sealed for this source, but bytes V8 must reject (a cache another Node made looks like this to it).
      ['rejected', (cache, chunk) => writeFileSync(cache, Buffer.concat([loader.seal(readFileSync(chunk, 'utf8'), Buffer.alloc(4096, 7)), Buffer.alloc(4096, 7)]))],
      // One byte of V8's payload flipped on disk: a release V8 does not checksum the payload and would
      // crash in its deserializer, so the seal must keep it from V8 (review15b).
      ...[100, 20_000, -100].map((at): [string, (cache: string) => void] => [
        `payload byte ${at} flipped`,
        (cache) => {
          const bytes = readFileSync(cache);
          const index = at < 0 ? bytes.length + at : at;
          bytes[index] = bytes[index]! ^ 0xff;
          writeFileSync(cache, bytes);
        },
      ]),
      // Cut short, as an interrupted copy would leave it.
      ['truncated', (cache) => writeFileSync(cache, readFileSync(cache).subarray(0, 5000))],
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
