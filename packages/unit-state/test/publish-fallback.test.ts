import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  FALLBACK_CONCLUSION_PREFIX,
  fallbackReason,
  parseResultSummary,
  publishAtomic,
  renderFallback,
  writeFallback,
  type FallbackCapture,
} from '../src/index.js';
import { ResultSummarySchema } from '../src/schemas.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'unit-state-publish-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('publishAtomic', () => {
  it('replaces the inode: a hard link to the old result keeps the old bytes', () => {
    const result = join(dir, 'unit.md');
    publishAtomic(result, '# unit result\nold\n');
    linkSync(result, join(dir, 'reader-holds'));
    const before = statSync(result).ino;
    publishAtomic(result, '# unit result\nnew\n', { tag: 'dispatch-task-agy', nonce: '0123456789abcdef' });
    expect(readFileSync(result, 'utf8')).toBe('# unit result\nnew\n');
    expect(readFileSync(join(dir, 'reader-holds'), 'utf8')).toBe('# unit result\nold\n');
    expect(statSync(result).ino).not.toBe(before);
  });

  it('a failed publish leaves no temp file behind', () => {
    // Renaming a file over a non-empty directory fails after the temp file is written.
    mkdirSync(join(dir, 'unit.md', 'occupied'), { recursive: true });
    expect(() => publishAtomic(join(dir, 'unit.md'), 'x', { tag: 'prun' })).toThrow();
    expect(readdirSync(dir)).toEqual(['unit.md']);
  });
});

describe('writeFallback, the streamed FALLBACK', () => {
  /** A capture that writes its (already stripped) text in pieces of `size` characters. */
  const inPieces = (text: string, size: number): FallbackCapture => ({
    empty: text === '',
    writeTo: (write) => {
      for (let at = 0; at < text.length; at += size) write(text.slice(at, at + size));
    },
  });

  it('streamed through publishAtomic, it is renderFallback byte for byte; an empty capture leaves its section out', () => {
    const cases: Array<[string, string]> = [
      ['{"event": "init"}\nline two', 'boom'],
      ['', 'only stderr'],
      ['only stdout', ''],
      ['', ''],
    ];
    for (const [out, err] of cases) {
      const result = join(dir, 'unit.md');
      publishAtomic(result, (write) => writeFallback({ unitId: 'unit_a', reason: 'Agy exited with code 3', stdout: inPieces(out, 3), stderr: inPieces(err, 1) }, write), {
        tag: 'dispatch-task-agy',
      });
      expect(readFileSync(result, 'utf8')).toBe(renderFallback({ unitId: 'unit_a', reason: 'Agy exited with code 3', stdout: out, stderr: err }));
      expect(readdirSync(dir)).toEqual(['unit.md']);
    }
    expect(readFileSync(join(dir, 'unit.md'), 'utf8')).toContain('\n\nNo worker output was captured.\n');
  });

  it('a capture that fails while it is written publishes nothing and leaves no temp file', () => {
    const result = join(dir, 'unit.md');
    publishAtomic(result, '# unit_a result\nold\n');
    const failing: FallbackCapture = {
      empty: false,
      writeTo: (write) => {
        write('half');
        throw new Error('read failed');
      },
    };
    expect(() => publishAtomic(result, (write) => writeFallback({ unitId: 'unit_a', reason: 'r', stdout: failing, stderr: inPieces('', 1) }, write))).toThrow('read failed');
    expect(readFileSync(result, 'utf8')).toBe('# unit_a result\nold\n');
    expect(readdirSync(dir)).toEqual(['unit.md']);
  });
});

describe('fallbackReason', () => {
  it('reads back the reason renderFallback wrote', () => {
    for (const reason of ['Agy exited with code 3', 'both Agy quota groups are exhausted (Gemini resets later, Claude and GPT resets later).', '']) {
      const summary = parseResultSummary(renderFallback({ unitId: 'u_1', reason }));
      expect(summary?.fallback).toBe(true);
      expect(summary?.conclusion?.startsWith(FALLBACK_CONCLUSION_PREFIX.trimEnd())).toBe(true);
      expect(fallbackReason(summary!)).toBe(reason.trim());
    }
    expect(fallbackReason({ conclusion: 'DONE; all good' })).toBe('DONE; all good');
    expect(fallbackReason({ conclusion: null })).toBe('');
  });
});

describe('start-up weight', () => {
  it('the main entry does not load zod (bins import it at start-up); the schemas subpath does', () => {
    const probe = fileURLToPath(new URL('./fixtures/zod-probe.mjs', import.meta.url));
    const load = (file: string) =>
      spawnSync(process.execPath, [probe, fileURLToPath(new URL(`../dist/${file}`, import.meta.url))], { encoding: 'utf8' });
    expect(load('index.js')).toMatchObject({ status: 0, stderr: '' });
    expect(load('schemas.js').stderr).toContain('loads zod');
    expect(ResultSummarySchema.safeParse({ unitId: 'u', fallback: false, conclusion: null, files: null, openItems: null, verification: null }).success).toBe(true);
  });
});
