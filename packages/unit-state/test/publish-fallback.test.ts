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
