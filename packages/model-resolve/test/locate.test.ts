import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expandUser, expandVars, locateAgy } from '../src/index.js';

let root: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'model-resolve-locate-')));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function file(path: string, mode: number): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, mode);
  return path;
}

describe('locateAgy', () => {
  it('finds agy on PATH by default and returns its real path through symlinks', () => {
    const target = file(join(root, 'real', 'agy-1.2.16'), 0o755);
    mkdirSync(join(root, 'bin'));
    symlinkSync(target, join(root, 'bin', 'agy'));
    expect(locateAgy({ PATH: join(root, 'empty') + ':' + join(root, 'bin') }, root)).toBe(target);
  });

  it('skips PATH entries that are not executable regular files', () => {
    file(join(root, 'a', 'agy'), 0o644);
    mkdirSync(join(root, 'b', 'agy'), { recursive: true });
    const good = file(join(root, 'c', 'agy'), 0o755);
    const PATH = ['a', 'b', 'c'].map((dir) => join(root, dir)).join(':');
    expect(locateAgy({ PATH }, '/')).toBe(good);
  });

  it('resolves relative PATH entries and empty entries against cwd', () => {
    const good = file(join(root, 'rel', 'agy'), 0o755);
    expect(locateAgy({ PATH: 'rel' }, root)).toBe(good);
    expect(locateAgy({ PATH: '/nonexistent:' }, join(root, 'rel'))).toBe(good);
  });

  it('an empty PATH finds nothing', () => {
    file(join(root, 'agy'), 0o755);
    expect(locateAgy({ PATH: '' }, root)).toBeNull();
  });

  it('a value with a slash is a path relative to cwd; no exec-bit check', () => {
    const plain = file(join(root, 'tools', 'agy'), 0o644);
    expect(locateAgy({ ANTIGRAVITY_BIN: 'tools/agy', PATH: '' }, root)).toBe(plain);
    expect(locateAgy({ ANTIGRAVITY_BIN: './tools/agy', PATH: '' }, root)).toBe(plain);
    expect(locateAgy({ ANTIGRAVITY_BIN: plain }, '/')).toBe(plain);
  });

  it('a path that is missing or a directory is not found, with no PATH search', () => {
    file(join(root, 'bin', 'agy'), 0o755);
    const PATH = join(root, 'bin');
    expect(locateAgy({ ANTIGRAVITY_BIN: 'nope/agy', PATH }, root)).toBeNull();
    expect(locateAgy({ ANTIGRAVITY_BIN: 'bin/', PATH }, root)).toBeNull();
  });

  it('a bare custom name is searched on PATH', () => {
    const custom = file(join(root, 'bin', 'agy-beta'), 0o755);
    expect(locateAgy({ ANTIGRAVITY_BIN: 'agy-beta', PATH: join(root, 'bin') }, '/')).toBe(custom);
    expect(locateAgy({ ANTIGRAVITY_BIN: 'agy-missing', PATH: join(root, 'bin') }, '/')).toBeNull();
  });

  it('an empty value is not found', () => {
    file(join(root, 'bin', 'agy'), 0o755);
    expect(locateAgy({ ANTIGRAVITY_BIN: '', PATH: join(root, 'bin') }, root)).toBeNull();
  });

  it('expands ~ and $VAR / ${VAR}', () => {
    const target = file(join(root, 'home', 'tools', 'agy'), 0o644);
    expect(locateAgy({ ANTIGRAVITY_BIN: '~/tools/agy', HOME: join(root, 'home') }, '/')).toBe(target);
    expect(locateAgy({ ANTIGRAVITY_BIN: '$T/agy', T: join(root, 'home', 'tools') }, '/')).toBe(target);
    expect(locateAgy({ ANTIGRAVITY_BIN: '${R}/home/${SUB}/agy', R: root, SUB: 'tools' }, '/')).toBe(target);
  });
});

describe('expandUser / expandVars (Python posixpath semantics)', () => {
  it('expandUser', () => {
    expect(expandUser('~', { HOME: '/h/' })).toBe('/h');
    expect(expandUser('~/x', { HOME: '/h' })).toBe('/h/x');
    expect(expandUser('~/x', { HOME: '/' })).toBe('/x');
    expect(expandUser('~', { HOME: '/' })).toBe('/');
    expect(expandUser('a/~/x', { HOME: '/h' })).toBe('a/~/x');
    expect(expandUser('~root/x', {})).toMatch(/\/x$/);
    expect(expandUser('~no-such-user-xyz/x', {})).toBe('~no-such-user-xyz/x');
  });

  it('expandVars', () => {
    const env = { A: '1', B_2: 'two', EMPTY: '', DOLLAR: '$A' };
    expect(expandVars('$A/$B_2/${A}x', env)).toBe('1/two/1x');
    expect(expandVars('$MISSING/${MISSING}/$', env)).toBe('$MISSING/${MISSING}/$');
    expect(expandVars('$EMPTY|$A-$', env)).toBe('|1-$');
    // Inserted values are not expanded again, and an unknown ${...} is skipped whole.
    expect(expandVars('$DOLLAR', env)).toBe('$A');
    expect(expandVars('${X$A}', env)).toBe('${X$A}');
    expect(expandVars('${A', env)).toBe('${A');
    expect(expandVars('$é', env)).toBe('$é');
  });
});
