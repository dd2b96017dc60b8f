import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it("removes a killed refresh's temp file, keeps a live writer's and other files", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'quota-files-'));
    dirs.push(dir);
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => dead.on('close', resolve));
    const stale = `.agy-quota-cache.json.prun-quota-${dead.pid}-0123456789abcdef.tmp`;
    const live = `.agy-quota-cache.json.prun-quota-${process.pid}-fedcba9876543210.tmp`;
    writeFileSync(path.join(dir, stale), 'half');
    writeFileSync(path.join(dir, live), 'in progress');
    writeFileSync(path.join(dir, 'other.json'), '{}');
    await writeFileAtomic(path.join(dir, 'agy-quota-cache.json'), '{"cached_at": 1.0}');
    expect(readdirSync(dir).sort()).toEqual([live, 'agy-quota-cache.json', 'other.json'].sort());
    expect(readFileSync(path.join(dir, 'agy-quota-cache.json'), 'utf8')).toBe('{"cached_at": 1.0}');
  });
});
