import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DestinationExistsError,
  MAX_ENTRY_BYTES,
  STATE_FILES,
  cwdHash,
  fallbackHeader,
  isFallbackFirstLine,
  isProcessAlive,
  isStateDirNameOf,
  isValidUnitId,
  newNonce,
  parseOperandLine,
  parseResultSummary,
  publishAtomic,
  publishNoReplace,
  pyStrip,
  readDispatchPid,
  readResultPathEntry,
  readSmallFile,
  readStateEntry,
  renderFallback,
  responseSiblingPath,
  stateDirName,
  systemTempDir,
} from '../src/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'unit-state-test-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('naming', () => {
  it('builds the state directory name from sha8(cwd), unit, pid and nonce', () => {
    // sha256("/work/x") starts with these 8 hex digits; hashing the bare path, no newline.
    const expected = execFileSync('sh', ['-c', 'printf %s /work/x | sha256sum']).toString().slice(0, 8);
    expect(cwdHash('/work/x')).toBe(expected);
    expect(stateDirName({ cwd: '/work/x', unitId: 'u_1', pid: 42, nonce: '0123456789abcdef' })).toBe(
      `prun-task-${expected}-u_1-42-0123456789abcdef`,
    );
  });

  it('makes 16-hex nonces', () => {
    const a = newNonce();
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(newNonce()).not.toBe(a);
  });

  it.each([
    ['unit_a', true],
    ['A-9_z', true],
    ['', false],
    ['a.b', false],
    ['a b', false],
    ['a/b', false],
    ['ünit', false],
    ['a\n', false],
  ])('unit id %j valid: %s', (id, ok) => {
    expect(isValidUnitId(id)).toBe(ok);
  });

  it('parses operand lines from dispatchers and plain paths', () => {
    expect(parseOperandLine('STATE-DIR /tmp/prun-task-x')).toBe('/tmp/prun-task-x');
    expect(parseOperandLine('/tmp/prun-task-y\r')).toBe('/tmp/prun-task-y');
    expect(parseOperandLine('   ')).toBeNull();
    expect(parseOperandLine('STATE-DIR ')).toBeNull();
  });

  it('picks the temp dir like Python: TMPDIR first when writable, else the next candidate', () => {
    expect(systemTempDir({ TMPDIR: dir }, '/')).toBe(dir);
    expect(systemTempDir({ TMPDIR: join(dir, 'missing'), TEMP: dir }, '/')).toBe(dir);
    expect(systemTempDir({ TMPDIR: `${dir}/` }, '/')).toBe(dir);
  });
});

describe('FALLBACK header', () => {
  it.each([
    ['# u1 result (FALLBACK, worker wrote no result file)', true],
    ['# u1 result (FALLBACK, Agy wrote no final result)', true],
    ['# u1 result (FALLBACK, x)\r', true],
    ['# u1 result: audit of `result (FALLBACK, ` matching', false],
    ['# u1 result (fallback, lowercase mention)', false],
    ['# a.b result (FALLBACK, x)', false],
    ['# u1 result (FALLBACK,x)', false],
    ['\ufeff# u1 result (FALLBACK, x)', false],
    ['body (FALLBACK, x)', false],
  ])('%j is a FALLBACK first line: %s', (line, expected) => {
    expect(isFallbackFirstLine(line)).toBe(expected);
  });

  it('renders the exact FALLBACK layout with both captures', () => {
    const text = renderFallback({ unitId: 'unit_a', reason: 'Agy exited with code 3', stdout: '\n{"event":"init"}\n', stderr: 'boom\n' });
    expect(text).toBe(
      [
        '# unit_a result (FALLBACK, Agy wrote no final result)',
        'Conclusion: INCOMPLETE; Agy exited with code 3',
        'Files: unknown',
        'Open items: Agy exited with code 3',
        'Verification: none (dispatcher fallback)',
        '',
        '## stdout events',
        '',
        '```text',
        '{"event":"init"}',
        '```',
        '',
        '## stderr',
        '',
        '```text',
        'boom',
        '```',
        '',
      ].join('\n'),
    );
    expect(isFallbackFirstLine(text)).toBe(true);
    expect(text.startsWith(fallbackHeader('unit_a'))).toBe(true);
  });

  it('says no output was captured when both captures are blank', () => {
    const text = renderFallback({ unitId: 'u', reason: 'r', stdout: ' \n', stderr: '' });
    expect(text.endsWith('\n\nNo worker output was captured.\n')).toBe(true);
  });

  it('strips like Python, not like JavaScript', () => {
    expect(pyStrip('\x1c ok \x1f')).toBe('ok');
    expect(pyStrip('\ufeffok')).toBe('\ufeffok');
    expect(pyStrip('\u2003ok\u3000\n')).toBe('ok');
  });

  it('parses the head of a result', () => {
    const summary = parseResultSummary('# a result\nConclusion: done\nFiles: x.ts\nOpen items: none\nVerification: tests\n\nbody');
    expect(summary).toEqual({ unitId: 'a', fallback: false, conclusion: 'done', files: 'x.ts', openItems: 'none', verification: 'tests' });
    const fb = parseResultSummary(renderFallback({ unitId: 'b', reason: 'gone' }));
    expect(fb?.fallback).toBe(true);
    expect(fb?.conclusion).toBe('INCOMPLETE; gone');
    expect(parseResultSummary('hello')).toBeNull();
  });
});

describe('response sibling', () => {
  it.each([
    ['/r/unit-result.md', '/r/unit-result.response.md'],
    ['/r/result', '/r/result.response'],
    ['/r/a.tar.gz', '/r/a.tar.response.gz'],
    ['/r/.hidden', '/r/.hidden.response'],
    ['/r/trailing.', '/r/trailing..response'],
  ])('%s -> %s', (path, sibling) => {
    expect(responseSiblingPath(path)).toBe(sibling);
  });
});

describe('publishing', () => {
  it('publishes atomically into a directory that does not exist yet, replacing and leaving no temp file', () => {
    const target = join(dir, 'a', 'b', 'result.md');
    publishAtomic(target, 'one\n');
    publishAtomic(target, 'two\n', { tag: 'dispatch-task-agy', nonce: 'abc' });
    expect(readFileSync(target, 'utf8')).toBe('two\n');
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['result.md']);
  });

  it('never replaces with publishNoReplace, and cleans its temp file', () => {
    const target = join(dir, 'snap.zip');
    publishNoReplace(target, 'first', { mode: 0o600 });
    expect(() => publishNoReplace(target, 'second')).toThrow(DestinationExistsError);
    expect(readFileSync(target, 'utf8')).toBe('first');
    expect(statSync(target).mode & 0o777).toBe(0o600 & ~process.umask());
    expect(readdirSync(dir)).toEqual(['snap.zip']);
  });
});

describe('reading entries', () => {
  it('reads a small regular file and refuses directories, FIFOs and oversize entries without blocking', () => {
    writeFileSync(join(dir, 'ok'), 'hello\n');
    expect(readSmallFile(join(dir, 'ok'))).toMatchObject({ ok: true, text: 'hello\n' });
    expect(readSmallFile(join(dir, 'none'))).toEqual({ ok: false, problem: 'absent' });
    mkdirSync(join(dir, 'd'));
    expect(readSmallFile(join(dir, 'd'))).toEqual({ ok: false, problem: 'NotARegularFile' });
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    expect(readSmallFile(join(dir, 'fifo'))).toEqual({ ok: false, problem: 'NotARegularFile' });
    writeFileSync(join(dir, 'exact'), Buffer.alloc(MAX_ENTRY_BYTES, 'a'));
    expect(readSmallFile(join(dir, 'exact')).ok).toBe(true);
    writeFileSync(join(dir, 'big'), Buffer.alloc(MAX_ENTRY_BYTES + 1, 'a'));
    expect(readSmallFile(join(dir, 'big'))).toEqual({ ok: false, problem: 'EntryTooLarge' });
    symlinkSync(join(dir, 'loop'), join(dir, 'loop'));
    expect(readSmallFile(join(dir, 'loop'))).toEqual({ ok: false, problem: 'ELOOP' });
  });

  it('reads entries of a unit whose name is not valid UTF-8, through a Buffer path', () => {
    const unit = Buffer.concat([Buffer.from(`${dir}/prun-task-`), Buffer.from([0xff, 0xfe])]);
    mkdirSync(unit);
    writeFileSync(Buffer.concat([unit, Buffer.from('/result-file')]), '/r.md\n');
    expect(readStateEntry(unit, STATE_FILES.resultFile)).toMatchObject({ ok: true, text: '/r.md\n' });
    expect(readStateEntry(unit, STATE_FILES.tail)).toEqual({ ok: false, problem: 'absent' });
  });

  it('reads the result path from the first line of result-file, dropping a CR', () => {
    writeFileSync(join(dir, STATE_FILES.resultFile), '/x/result.md\r\nsecond\n');
    expect(readResultPathEntry(dir)).toBe('/x/result.md');
    writeFileSync(join(dir, STATE_FILES.resultFile), '\n/x\n');
    expect(readResultPathEntry(dir)).toBeNull();
    rmSync(join(dir, STATE_FILES.resultFile));
    expect(readResultPathEntry(dir)).toBeNull();
  });

  it.each([
    ['123\n', 123],
    ['123\r\n', 123],
    [' 123', null],
    ['123 ', null],
    ['+123', null],
    ['-1', null],
    ['0', null],
    ['0x10', null],
    ['abc', null],
    ['', null],
  ])('dispatch-pid %j -> %s', (content, pid) => {
    writeFileSync(join(dir, STATE_FILES.dispatchPid), content);
    expect(readDispatchPid(dir)).toBe(pid);
  });

  it('sees its own process alive and a reaped child dead', () => {
    expect(isProcessAlive(process.pid)).toBe(true);
    const child = execFileSync('sh', ['-c', 'echo $$']).toString().trim();
    expect(isProcessAlive(Number(child))).toBe(false);
  });

  it('counts a process of another user (EPERM) as alive', () => {
    // pid 1 belongs to root. Asked by an unprivileged user, signal 0 fails with EPERM, which
    // must read as alive. As root, load the module first and then drop to nobody, so the
    // check works even where the checkout is unreadable to nobody (a 0700 clone dir).
    const moduleUrl = JSON.stringify(new URL('../dist/index.js', import.meta.url).href);
    const drop = process.getuid?.() === 0 ? 'process.setgid(65534); process.setuid(65534);' : '';
    const check = `const m = await import(${moduleUrl}); ${drop} process.stdout.write(String(m.isProcessAlive(1)));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', check], { cwd: '/' }).toString();
    expect(out).toBe('true');
  });
});

describe('a state dir of one unit', () => {
  it('matches the whole naming rule for that unit id, not just the prefix', () => {
    const name = stateDirName({ cwd: '/w', unitId: 'a-b', pid: 42, nonce: '0123456789abcdef' });
    expect(isStateDirNameOf(name, 'a-b')).toBe(true);
    expect(isStateDirNameOf('prun-task-nohash-a-b-42-0123456789abcdef', 'a-b')).toBe(true);
    expect(isStateDirNameOf(name, 'a')).toBe(false);
    expect(isStateDirNameOf(name, 'b')).toBe(false);
    for (const bad of ['prun-task-x', 'prun-task-0123abcd-a-b-42-0123', 'prun-task-0123abcd-a-b-x-0123456789abcdef', `${name}/..`, `x${name}`]) {
      expect(isStateDirNameOf(bad, 'a-b'), bad).toBe(false);
    }
    expect(isStateDirNameOf(name, '../a-b')).toBe(false);
  });
});
