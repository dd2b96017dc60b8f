// Ports of the upstream tests/test_prun_report.py inventory (the original's own test suite), run against the built bin.
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LEGAL_RESULT_PAIRS, SAFETY_SENTENCE } from '../src/index.js';
import { BIN, cleanupTempDirs, makeUnit, pair, runBin, runJson, tempDir, unprivilegedSpawn, type JsonReport } from './helpers.js';

afterEach(cleanupTempDirs);

const asUser = unprivilegedSpawn();
beforeAll(() => {
  if (asUser === null) console.warn('report-state: cannot drop privileges; real permission-denial tests are skipped');
});

/** A temp dir the unprivileged user can traverse. */
function openTempDir(): string {
  const dir = tempDir();
  chmodSync(dir, 0o755);
  return dir;
}

describe('evidence pairs', () => {
  it('resolved/present', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: join(root, 'out', 'r.md'), resultBody: 'body' });
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'present']);
    expect(status).toBe(0);
  });

  it('resolved/empty', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: join(root, 'out', 'r.md'), resultBody: '' });
    expect(pair(runJson(root).byName.get('prun-task-u'))).toEqual(['resolved', 'empty']);
  });

  it('resolved/missing', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: join(root, 'out', 'never.md') });
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'missing']);
    expect(byName.get('prun-task-u')?.result_target).toBe(join(root, 'out', 'never.md'));
    expect(status).toBe(0);
  });

  it('absent-entry/unknown', () => {
    const root = tempDir();
    makeUnit(root, 'u');
    expect(pair(runJson(root).byName.get('prun-task-u'))).toEqual(['absent-entry', 'unknown']);
  });

  it('an empty entry is invalid', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: '' });
    expect(pair(runJson(root).byName.get('prun-task-u'))).toEqual(['invalid-entry', 'unknown']);
  });

  it('a relative entry escaping its unit is invalid', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: '../../etc/passwd' });
    const unit = runJson(root).byName.get('prun-task-u');
    expect(pair(unit)).toEqual(['invalid-entry', 'unknown']);
    expect(unit?.result_target).toBeNull();
  });

  it('an absolute entry elsewhere is resolved', () => {
    const root = tempDir();
    const elsewhere = tempDir();
    makeUnit(root, 'u', { resultEntry: join(elsewhere, 'r.md'), resultBody: 'body' });
    expect(pair(runJson(root).byName.get('prun-task-u'))).toEqual(['resolved', 'present']);
  });

  it('a relative entry inside the unit resolves to its normalized absolute path', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'u', { resultEntry: './r.md\n' });
    writeFileSync(join(unit, 'r.md'), 'x');
    const record = runJson(root).byName.get('prun-task-u');
    expect(pair(record)).toEqual(['resolved', 'present']);
    expect(record?.result_target).toBe(join(unit, 'r.md'));
  });

  it('an entry naming a path that is not UTF-8 states that file, and JSON shows its bytes as \\udcXX', () => {
    // The named file `res-\xff.md` is not empty; a decoy named as a lossy decoding would name it
    // (`res-\ufffd.md`) is empty: reporting `empty` means the wrong file was stated.
    const root = tempDir();
    const out = tempDir();
    const bytes = (...parts: Array<string | number[]>): Buffer => Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));
    writeFileSync(bytes(out, '/res-', [0xff], '.md'), 'the result');
    writeFileSync(join(out, 'res-\ufffd.md'), '');
    makeUnit(root, 'absolute', { resultEntry: bytes(out, '/res-', [0xff], '.md\n') });
    const relative = makeUnit(root, 'relative', { resultEntry: bytes('./r-', [0xfe, 0x41], '.md') });
    writeFileSync(bytes(relative, '/r-', [0xfe, 0x41], '.md'), 'x');
    writeFileSync(join(relative, 'r-\ufffdA.md'), '');
    const missing = makeUnit(root, 'missing', { resultEntry: bytes(out, '/gone-', [0x80]) });
    // A real U+FFFD in a UTF-8 entry is a character of the name, as before.
    writeFileSync(join(out, 'real-\ufffd.md'), 'y');
    makeUnit(root, 'real-fffd', { resultEntry: `${out}/real-\ufffd.md` });
    const run = runBin(['--root', root, '--json']);
    expect(run.status).toBe(0);
    // As Python's json.dumps writes a surrogate escape: the six characters \udcff.
    expect(run.stdout).toContain('/res-\\udcff.md"');
    const units = new Map((JSON.parse(run.stdout) as JsonReport).units.map((u) => [u.unit, u]));
    expect(units.get(join(root, 'prun-task-absolute'))).toMatchObject({ result_path_state: 'resolved', result: 'present', result_target: `${out}/res-\udcff.md`, errors: [] });
    expect(units.get(relative)).toMatchObject({ result_path_state: 'resolved', result: 'present', result_target: `${relative}/r-\udcfeA.md`, errors: [] });
    expect(units.get(missing)).toMatchObject({ result_path_state: 'resolved', result: 'missing', result_target: `${out}/gone-\udc80`, errors: [] });
    expect(units.get(join(root, 'prun-task-real-fffd'))).toMatchObject({ result: 'present', result_target: `${out}/real-\ufffd.md` });
  });

  it('no illegal pair can be emitted', () => {
    const root = tempDir();
    makeUnit(root, 'present', { resultEntry: join(root, 'out', 'r.md'), resultBody: 'body' });
    makeUnit(root, 'emptyentry', { resultEntry: '' });
    makeUnit(root, 'noentry');
    makeUnit(root, 'escape', { resultEntry: '../x' });
    const { report } = runJson(root);
    expect(report.units).toHaveLength(4);
    for (const unit of report.units) {
      const allowed = (LEGAL_RESULT_PAIRS as Record<string, readonly string[]>)[unit.result_path_state];
      expect(allowed).toContain(unit.result);
    }
  });
});

describe('summary', () => {
  it('a unit with a tail and no entry is unresolved', () => {
    const root = tempDir();
    makeUnit(root, 'u', { tail: 'x'.repeat(700) });
    const summary = runJson(root, ['--summary']).report.summary!;
    expect([summary.unresolved_units, summary.unresolved_bytes, summary.missing_or_empty_result_units]).toEqual([1, 700, 0]);
  });

  it('the counters never double count', () => {
    const root = tempDir();
    makeUnit(root, 'missing', { tail: 'm'.repeat(100), resultEntry: join(root, 'gone.md') });
    makeUnit(root, 'noentry', { tail: 'n'.repeat(200) });
    makeUnit(root, 'present', { tail: 'p'.repeat(400), resultEntry: join(root, 'p.md'), resultBody: 'body' });
    const summary = runJson(root, ['--summary']).report.summary!;
    expect(summary.missing_or_empty_result_bytes).toBe(100);
    expect(summary.unresolved_bytes).toBe(200);
    expect(summary.units).toBe(3);
  });

  it('an empty tail counts toward neither', () => {
    const root = tempDir();
    makeUnit(root, 'u', { tail: '' });
    const summary = runJson(root, ['--summary']).report.summary!;
    expect([summary.unresolved_units, summary.missing_or_empty_result_units]).toEqual([0, 0]);
  });
});

describe('observation failures', () => {
  it.skipIf(asUser === null)('a denied stat on a live target is unknown, not missing', () => {
    const root = openTempDir();
    const locked = join(root, 'locked');
    const target = join(locked, 'r.md');
    makeUnit(root, 'u', { resultEntry: target, resultBody: 'body' });
    chmodSync(locked, 0o000);
    const { status, byName, report } = runJson(root, ['--summary'], asUser ?? {});
    const unit = byName.get('prun-task-u')!;
    expect([unit.result_path_state, unit.result, unit.result_target]).toEqual(['resolved', 'unknown', target]);
    expect(unit.errors).toEqual([{ stage: 'result-target', error: 'PermissionError' }]);
    expect(status).toBe(1);
    expect(report.summary?.missing_or_empty_result_units).toBe(0);
  });

  it.skipIf(asUser === null)('a root that can be listed but not searched: each unit is a unit-entry PermissionError, as the original stats every entry', () => {
    const root = openTempDir();
    makeUnit(root, 'a', { resultEntry: join(root, 'r.md') });
    makeUnit(root, 'b');
    writeFileSync(join(root, 'prun-task-file'), 'not a unit');
    chmodSync(root, 0o744); // others may read the listing, not search it
    const { status, report } = runJson(root, [], asUser ?? {});
    expect(report.units).toEqual([]);
    expect(report.discovery_errors).toEqual(
      ['prun-task-a', 'prun-task-b', 'prun-task-file'].map((name) => ({ stage: 'unit-entry', unit: join(root, name), error: 'PermissionError' })),
    );
    expect(status).toBe(1);
  });

  it('only a real absence is reported as missing', () => {
    const root = tempDir();
    makeUnit(root, 'u', { tail: 'x', resultEntry: join(root, 'never.md') });
    const { status, byName, report } = runJson(root, ['--summary']);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'missing']);
    expect(byName.get('prun-task-u')?.errors).toEqual([]);
    expect(status).toBe(0);
    expect(report.summary?.missing_or_empty_result_units).toBe(1);
  });

  it.skipIf(asUser === null)('a denied entry read is unreadable, not absent', () => {
    const root = openTempDir();
    const unit = makeUnit(root, 'u', { resultEntry: join(root, 'r.md'), resultBody: 'x' });
    chmodSync(join(unit, 'result-file'), 0o000);
    const { status, byName } = runJson(root, [], asUser ?? {});
    expect(pair(byName.get('prun-task-u'))).toEqual(['unreadable', 'unknown']);
    expect(byName.get('prun-task-u')?.errors).toEqual([{ stage: 'result-entry', error: 'PermissionError' }]);
    expect(status).toBe(1);
  });

  const notRoot = process.getuid?.() !== 0;
  it.skipIf(notRoot)(`as root, chmod 000 does not deny a read, and the report says what it saw${notRoot ? ' (skipped: needs root)' : ''}`, () => {
    // Honest about privilege: root reads a mode-000 entry, so the unit resolves normally.
    const root = tempDir();
    const unit = makeUnit(root, 'u', { resultEntry: join(root, 'r.md'), resultBody: 'x' });
    chmodSync(join(unit, 'result-file'), 0o000);
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'present']);
    expect(status).toBe(0);
  });

  it.skipIf(asUser === null)('a denied legacy pid read is recorded, not swallowed', () => {
    const root = openTempDir();
    const unit = makeUnit(root, 'u', { dispatchPid: '4242' });
    chmodSync(join(unit, 'dispatch-pid'), 0o000);
    const { status, byName } = runJson(root, ['--include-legacy-pid'], asUser ?? {});
    const record = byName.get('prun-task-u')!;
    expect(record.legacy_pid_unverified).toBeNull();
    expect(record.errors).toEqual([{ stage: 'legacy-pid', error: 'PermissionError' }]);
    expect(status).toBe(1);
  });

  it('an absent legacy pid stays silent', () => {
    const root = tempDir();
    makeUnit(root, 'u');
    const { status, byName } = runJson(root, ['--include-legacy-pid']);
    expect(byName.get('prun-task-u')).toMatchObject({ legacy_pid_unverified: null, errors: [] });
    expect(status).toBe(0);
  });

  it.skipIf(asUser === null)('a matching entry that cannot be stated is a discovery error', () => {
    const root = openTempDir();
    makeUnit(root, 'ok');
    const locked = join(root, 'locked');
    mkdirSync(join(locked, 'inner'), { recursive: true });
    chmodSync(locked, 0o000);
    symlinkSync(join(locked, 'inner'), join(root, 'prun-task-denied'));
    const { status, report } = runJson(root, [], asUser ?? {});
    expect(report.unit_count).toBe(1);
    expect(report.discovery_errors).toEqual([{ stage: 'unit-entry', unit: join(root, 'prun-task-denied'), error: 'PermissionError' }]);
    expect(status).toBe(1);
  });

  it('a non-regular metadata entry is not read', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'u');
    mkdirSync(join(unit, 'result-file'));
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['unreadable', 'unknown']);
    expect(byName.get('prun-task-u')?.errors.map((e) => e.error)).toEqual(['NotARegularFile']);
    expect(status).toBe(1);
  });

  it('an oversized metadata entry is reported, not truncated', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: 'x'.repeat(128 * 1024) });
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['unreadable', 'unknown']);
    expect(byName.get('prun-task-u')?.errors).toEqual([{ stage: 'result-entry', error: 'EntryTooLarge' }]);
    expect(status).toBe(1);
  });

  it('an entry exactly at the cap is still valid', () => {
    const root = tempDir();
    const target = join(root, 'out', 'r.md');
    makeUnit(root, 'u', { resultEntry: target.padEnd(65536, ' '), tail: 'x' });
    mkdirSync(join(root, 'out'));
    writeFileSync(target, 'body');
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'present']);
    expect(byName.get('prun-task-u')?.result_target).toBe(target);
    expect(status).toBe(0);
  });

  it('a truncated entry cannot masquerade as a valid path', () => {
    const root = tempDir();
    const target = join(root, 'out', 'r.md');
    mkdirSync(join(root, 'out'));
    writeFileSync(target, 'body');
    makeUnit(root, 'u', { resultEntry: `${target.padEnd(65536, ' ')}AND-THEN-SOMETHING-ELSE.md` });
    const { status, byName } = runJson(root);
    expect(pair(byName.get('prun-task-u'))).toEqual(['unreadable', 'unknown']);
    expect(byName.get('prun-task-u')?.errors.map((e) => e.error)).toEqual(['EntryTooLarge']);
    expect(status).toBe(1);
  });

  it('an oversized legacy pid is recorded under its own stage', () => {
    const root = tempDir();
    makeUnit(root, 'u', { dispatchPid: '9'.repeat(65546) });
    const { status, byName } = runJson(root, ['--include-legacy-pid']);
    const record = byName.get('prun-task-u')!;
    expect(record.legacy_pid_unverified).toBeNull();
    expect(record.errors).toEqual([{ stage: 'legacy-pid', error: 'EntryTooLarge' }]);
    expect(status).toBe(1);
  });

  it('an entry with a NUL byte takes the defensive path and keeps every field', () => {
    const root = tempDir();
    makeUnit(root, 'u', { tail: 'x', resultEntry: Buffer.from('/tmp/a\0b.md') });
    const { status, byName } = runJson(root);
    const record = byName.get('prun-task-u')!;
    expect(Object.keys(record)).toEqual(['unit', 'errors', 'result_path_state', 'result', 'result_target', 'tail_bytes']);
    expect(record).toMatchObject({ result_path_state: 'unreadable', result: 'unknown', result_target: null, tail_bytes: 1 });
    expect(record.errors).toEqual([{ stage: 'result', error: 'ValueError' }]);
    expect(status).toBe(1);
  });
});

describe('roots', () => {
  it('a relative root classifies an in-unit entry correctly and is reported absolute', () => {
    const cwd = tempDir();
    const corpus = join(cwd, 'corpus');
    makeUnit(corpus, 'u', { resultEntry: 'result.txt', resultBody: 'x' });
    const run = runBin(['--root', 'corpus', '--json'], { cwd });
    const report = JSON.parse(run.stdout) as { roots: string[]; units: { unit: string; result_path_state: string; result: string }[] };
    expect(run.status).toBe(0);
    expect(report.roots).toEqual([corpus]);
    expect(report.units[0]).toMatchObject({ unit: join(corpus, 'prun-task-u'), result_path_state: 'resolved', result: 'present' });
  });

  it.skipIf(asUser === null)('a root that cannot be listed is reported', () => {
    const root = openTempDir();
    const locked = join(root, 'locked');
    mkdirSync(locked);
    makeUnit(locked, 'u');
    chmodSync(locked, 0o000);
    const { status, report } = runJson(locked, [], asUser ?? {});
    expect(report.discovery_errors).toEqual([{ stage: 'root', root: locked, error: 'PermissionError' }]);
    expect(report.unit_count).toBe(0);
    expect(status).toBe(1);
  });

  it('a missing root is not an empty corpus', () => {
    const root = join(tempDir(), 'no', 'such');
    const { status, report } = runJson(root);
    expect(report.unit_count).toBe(0);
    expect(report.discovery_errors.map((e) => e.error)).toEqual(['FileNotFoundError']);
    expect(status).toBe(1);
  });

  it('writes U+007F as \\u007f in JSON, as Python json.dumps does (it was written raw before)', () => {
    const root = join(tempDir(), 'r\x7foot');
    mkdirSync(root);
    const run = runBin(['--root', root, '--json']);
    expect(run.stdout).toContain('r\\u007foot');
    expect(run.stdout).not.toContain('\x7f');
    expect(JSON.parse(run.stdout).roots).toEqual([root]);
  });

  it('a file as a root is NotADirectoryError', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f'), '');
    expect(runJson(join(dir, 'f')).report.discovery_errors).toEqual([{ stage: 'root', root: join(dir, 'f'), error: 'NotADirectoryError' }]);
  });

  it('a readable root beside an unreadable one is still inspected', () => {
    const good = tempDir();
    makeUnit(good, 'u');
    const { status, report } = runJson([join(good, 'missing'), good]);
    expect(report.unit_count).toBe(1);
    expect(report.discovery_errors).toHaveLength(1);
    expect(status).toBe(1);
  });

  it('a clean sweep reports no discovery errors', () => {
    const root = tempDir();
    makeUnit(root, 'u');
    const { status, report } = runJson(root);
    expect(report.discovery_errors).toEqual([]);
    expect(status).toBe(0);
  });

  it('a root given twice lists it twice but visits each unit once', () => {
    const root = tempDir();
    makeUnit(root, 'u');
    const { report } = runJson([root, `${root}/`]);
    expect(report.roots).toEqual([root, root]);
    expect(report.unit_count).toBe(1);
  });

  it('defaults to the system temporary directory, TMPDIR first', () => {
    const root = tempDir();
    makeUnit(root, 'from-tmpdir', { tail: 'abc' });
    const run = runBin(['--json'], { env: { TMPDIR: root, TEMP: '/nonexistent', TMP: '/nonexistent' } });
    const report = JSON.parse(run.stdout) as { roots: string[]; units: { unit: string }[] };
    expect(report.roots).toEqual([root]);
    expect(report.units.map((u) => u.unit)).toEqual([join(root, 'prun-task-from-tmpdir')]);
  });

  it('skips matching names that are not directories, silently', () => {
    const root = tempDir();
    writeFileSync(join(root, 'prun-task-file'), 'x');
    mkdirSync(join(root, 'other-dir'));
    makeUnit(root, 'u');
    const { status, report } = runJson(root);
    expect(report.units.map((u) => u.unit)).toEqual([join(root, 'prun-task-u')]);
    expect(status).toBe(0);
  });
});

describe('non-regular files', () => {
  it('a directory target is unknown, not empty', () => {
    const root = tempDir();
    mkdirSync(join(root, 'adir'));
    makeUnit(root, 'u', { tail: 'x', resultEntry: join(root, 'adir') });
    const { status, byName, report } = runJson(root, ['--summary']);
    expect(pair(byName.get('prun-task-u'))).toEqual(['resolved', 'unknown']);
    expect(byName.get('prun-task-u')?.errors).toEqual([{ stage: 'result-target', error: 'NotARegularFile' }]);
    expect(status).toBe(1);
    expect(report.summary?.missing_or_empty_result_units).toBe(0);
  });

  it('a directory tail is null, not zero', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'u', { tail: null });
    mkdirSync(join(unit, 'tail'));
    const { status, byName } = runJson(root);
    expect(byName.get('prun-task-u')?.tail_bytes).toBeNull();
    expect(byName.get('prun-task-u')?.errors.map((e) => e.stage)).toEqual(['tail']);
    expect(status).toBe(1);
  });
});

describe('output contract', () => {
  it('the legacy pid is absent by default', () => {
    const root = tempDir();
    makeUnit(root, 'u', { dispatchPid: '4242' });
    const plain = runBin(['--root', root, '--json']);
    expect(plain.stdout).not.toContain('legacy_pid_unverified');
    expect(plain.stdout).not.toContain('4242');
    expect(runJson(root, ['--include-legacy-pid']).byName.get('prun-task-u')?.legacy_pid_unverified).toBe('4242');
  });

  it('--min-tail-bytes filters the display only', () => {
    const root = tempDir();
    makeUnit(root, 'small', { tail: 's'.repeat(10) });
    makeUnit(root, 'big', { tail: 'b'.repeat(5000) });
    const { report } = runJson(root, ['--min-tail-bytes', '1000', '--summary']);
    expect(report.units.map((u) => u.unit.slice(u.unit.lastIndexOf('/') + 1))).toEqual(['prun-task-big']);
    expect(report.units[0]?.tail_bytes).toBe(5000);
    expect(report.unit_count).toBe(2);
    expect(report.summary?.units).toBe(2);
  });

  it('a negative --min-tail-bytes is accepted and hides nothing (as argparse int reads it)', () => {
    const root = tempDir();
    makeUnit(root, 'small', { tail: '' });
    makeUnit(root, 'big', { tail: 'b'.repeat(5000) });
    const { status, report } = runJson(root, ['--min-tail-bytes', '-1']);
    expect(status).toBe(0);
    expect(report.units).toHaveLength(2);
  });

  it('errors of a hidden unit still make the sweep partial', () => {
    const root = tempDir();
    const hidden = makeUnit(root, 'hidden', { tail: '' });
    mkdirSync(join(hidden, 'result-file'));
    makeUnit(root, 'big', { tail: 'b'.repeat(5000) });
    const { status, report } = runJson(root, ['--min-tail-bytes', '1000']);
    expect(report.units).toHaveLength(1);
    expect(status).toBe(1);
  });

  it('ordering is stable and by path by default', () => {
    const root = tempDir();
    for (const name of ['c', 'a', 'B']) makeUnit(root, name);
    const first = runJson(root).report.units.map((u) => u.unit);
    expect(runJson(root).report.units.map((u) => u.unit)).toEqual(first);
    expect(first.map((u) => u.slice(u.lastIndexOf('/') + 1))).toEqual(['prun-task-B', 'prun-task-a', 'prun-task-c']);
  });

  it('--sort tail-bytes-desc', () => {
    const root = tempDir();
    makeUnit(root, 'a-small', { tail: 'x'.repeat(10) });
    makeUnit(root, 'z-big', { tail: 'x'.repeat(5000) });
    const { report } = runJson(root, ['--sort', 'tail-bytes-desc']);
    expect(report.units.map((u) => u.unit.slice(u.unit.lastIndexOf('/') + 1))).toEqual(['prun-task-z-big', 'prun-task-a-small']);
    expect(report.units.map((u) => u.tail_bytes)).toEqual([5000, 10]);
  });

  it('the JSON is complete even when a unit fails', () => {
    const root = tempDir();
    const bad = makeUnit(root, 'bad');
    mkdirSync(join(bad, 'result-file'));
    makeUnit(root, 'good', { resultEntry: join(root, 'r.md') });
    const { status, report, stderr } = runJson(root);
    expect(status).toBe(1);
    expect(report.units).toHaveLength(2);
    expect(report.units.filter((u) => u.errors.length > 0)).toHaveLength(1);
    expect(stderr).toBe('');
  });

  it('the safety sentence is always present, in JSON and in text', () => {
    const root = tempDir();
    const json = runJson(root);
    expect(json.report.safety).toBe(SAFETY_SENTENCE);
    expect(json.report.safety).toContain('only safe operation');
    const text = runBin(['--root', root]);
    expect(text.stdout).toContain(
      '\n\nSnapshotting a tail is the only safe operation offered here.\n' +
        'This output does not establish that deleting, overwriting, or\n' +
        'promoting any unit is safe.\n',
    );
  });

  it('writes the schema keys in contract order and pure ASCII', () => {
    const root = tempDir();
    makeUnit(root, 'é', { tail: 'x' });
    const run = runBin(['--root', root, '--json', '--summary', '--include-legacy-pid']);
    expect(run.stdout).toMatch(/^[\x00-\x7f]*$/);
    expect(run.stdout).toContain('prun-task-\\u00e9');
    const parsed = JSON.parse(run.stdout) as Record<string, unknown> & { units: Record<string, unknown>[] };
    expect(Object.keys(parsed)).toEqual(['schema_version', 'roots', 'unit_count', 'discovery_errors', 'units', 'safety', 'summary']);
    expect(Object.keys(parsed.units[0]!)).toEqual([
      'unit', 'errors', 'result_path_state', 'result', 'result_target', 'tail_bytes', 'legacy_pid_unverified',
    ]);
    expect(parsed.schema_version).toBe(1);
  });
});

describe('text output', () => {
  it('prints the table, discovery failures and the incomplete notice on stderr, summary as key=value', () => {
    const root = tempDir();
    makeUnit(root, 'missing', { tail: 'x'.repeat(2_000_000), resultEntry: join(root, 'gone.md') });
    makeUnit(root, 'present', { tail: 'x'.repeat(1500), resultEntry: join(root, 'p.md'), resultBody: 'p', dispatchPid: '4242\n' });
    const run = runBin(['--root', root, '--root', join(root, 'nonexist'), '--summary', '--include-legacy-pid']);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(
      [
        'unit                                                 result    path           tail bytes  legacy_pid_unverified',
        '-'.repeat(111),
        'prun-task-missing                                    missing   resolved        2,000,000  -',
        'prun-task-present                                    present   resolved            1,500  4242',
        '',
        'units 2   missing-or-empty result 1 units, 1.9 MiB',
        '  unresolved    : 0 units, 0.0 MiB (tail present, result never classified)',
        '  by result     : missing=1 present=1',
        '  by path state : resolved=2',
        '',
        'Snapshotting a tail is the only safe operation offered here.',
        'This output does not establish that deleting, overwriting, or',
        'promoting any unit is safe.',
        '',
      ].join('\n'),
    );
    expect(run.stderr).toBe(
      `prun-report-state: discovery failed: ${join(root, 'nonexist')} (FileNotFoundError)\n\n` +
        'prun-report-state: This sweep is incomplete; see the errors column and any discovery failures above.\n',
    );
  });

  it('a unit directory named with a newline prints as one escaped table line; --json keeps the real name', () => {
    const root = tempDir();
    makeUnit(root, 'abc\nUNIT fake done', { tail: 'x', resultEntry: join(root, 'p.md'), resultBody: 'p' });
    const run = runBin(['--root', root]);
    expect(run.status).toBe(0);
    const table = run.stdout.split('\n\n')[0]!.split('\n');
    expect(table).toHaveLength(3);
    expect(table[2]).toMatch(/^prun-task-abc\\x0aUNIT fake done +present +resolved +1$/);
    expect(run.stdout).not.toMatch(/^UNIT fake done/m);
    expect(runJson(root).report.units.map((u) => u.unit)).toEqual([join(root, 'prun-task-abc\nUNIT fake done')]);
  });

  it('an empty corpus prints header, dashes, blank line and the safety block; exit 0', () => {
    const root = tempDir();
    const run = runBin(['--root', root]);
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout.split('\n').slice(0, 4)).toEqual([
      'unit                                                 result    path           tail bytes',
      '-'.repeat(88),
      '',
      'Snapshotting a tail is the only safe operation offered here.',
    ]);
  });
});

describe('the observed example output of the original', () => {
  function observedCorpus(): string {
    const base = tempDir();
    const root = join(base, 'root');
    const out = join(base, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'p.md'), 'present');
    writeFileSync(join(out, 'e.md'), '');
    mkdirSync(join(out, 'adir'));
    makeUnit(root, 'blank', { resultEntry: '  \n' });
    mkdirSync(join(makeUnit(root, 'direntry'), 'result-file'));
    mkdirSync(join(makeUnit(root, 'dirtail', { tail: null }), 'tail'));
    makeUnit(root, 'dirtarget', { tail: 'xx', resultEntry: join(out, 'adir') });
    makeUnit(root, 'empty', { tail: 'xxx', resultEntry: join(out, 'e.md') });
    makeUnit(root, 'escape', { tail: 'xx', resultEntry: '../../etc/passwd' });
    makeUnit(root, 'missing', { tail: 'x'.repeat(2_000_000), resultEntry: join(out, 'gone.md') });
    makeUnit(root, 'noentry', { tail: 'xxxxx' });
    makeUnit(root, 'present', { tail: 'x'.repeat(1500), resultEntry: `${join(out, 'p.md')}\n`, dispatchPid: '4242\n' });
    const rel = makeUnit(root, 'rel', { tail: 'xx', resultEntry: 'r.md' });
    writeFileSync(join(rel, 'r.md'), 'r');
    makeUnit(root, 'this-is-a-very-long-unit-name-that-exceeds-the-column-width');
    return root;
  }

  it('prints the observed table row for row', () => {
    const root = observedCorpus();
    const run = runBin(['--root', root, '--summary', '--include-legacy-pid']);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(
      [
        'unit                                                 result    path           tail bytes  legacy_pid_unverified',
        '---------------------------------------------------------------------------------------------------------------',
        'prun-task-blank                                      unknown   invalid-entry           0  -',
        'prun-task-direntry                                   unknown   unreadable              0  -',
        '    error [result-entry]: NotARegularFile',
        'prun-task-dirtail                                    unknown   absent-entry            ?  -',
        '    error [tail]: NotARegularFile',
        'prun-task-dirtarget                                  unknown   resolved                2  -',
        '    error [result-target]: NotARegularFile',
        'prun-task-empty                                      empty     resolved                3  -',
        'prun-task-escape                                     unknown   invalid-entry           2  -',
        'prun-task-missing                                    missing   resolved        2,000,000  -',
        'prun-task-noentry                                    unknown   absent-entry            5  -',
        'prun-task-present                                    present   resolved            1,500  4242',
        'prun-task-rel                                        present   resolved                2  -',
        'prun-task-this-is-a-very-long-unit-name-that-exceeds unknown   absent-entry            0  -',
        '',
        'units 11   missing-or-empty result 2 units, 1.9 MiB',
        '  unresolved    : 3 units, 0.0 MiB (tail present, result never classified)',
        '  by result     : unknown=7 empty=1 missing=1 present=2',
        '  by path state : invalid-entry=2 unreadable=1 absent-entry=3 resolved=5',
        '',
        'Snapshotting a tail is the only safe operation offered here.',
        'This output does not establish that deleting, overwriting, or',
        'promoting any unit is safe.',
        '',
      ].join('\n'),
    );
  });

  it('gives the observed JSON for the full option set', () => {
    const root = observedCorpus();
    const run = runBin([
      '--root', root, '--root', join(root, 'nonexist'), '--json', '--summary',
      '--sort', 'tail-bytes-desc', '--min-tail-bytes', '3', '--include-legacy-pid',
    ]);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as JsonReport;
    expect(report.roots).toEqual([root, join(root, 'nonexist')]);
    expect(report.unit_count).toBe(11);
    expect(report.discovery_errors).toEqual([{ stage: 'root', root: join(root, 'nonexist'), error: 'FileNotFoundError' }]);
    expect(report.units.map((u) => [u.unit.slice(root.length + 1), u.result_path_state, u.result, u.tail_bytes, u.legacy_pid_unverified])).toEqual([
      ['prun-task-missing', 'resolved', 'missing', 2_000_000, null],
      ['prun-task-present', 'resolved', 'present', 1500, '4242'],
      ['prun-task-noentry', 'absent-entry', 'unknown', 5, null],
      ['prun-task-empty', 'resolved', 'empty', 3, null],
    ]);
    expect(report.summary).toEqual({
      units: 11,
      by_result: { unknown: 7, empty: 1, missing: 1, present: 2 },
      by_path_state: { 'invalid-entry': 2, unreadable: 1, 'absent-entry': 3, resolved: 5 },
      missing_or_empty_result_bytes: 2_000_003,
      missing_or_empty_result_units: 2,
      unresolved_bytes: 9,
      unresolved_units: 3,
    });
    expect(Object.keys(report.summary!.by_path_state)).toEqual(['invalid-entry', 'unreadable', 'absent-entry', 'resolved']);
  });
});

describe('pipes', () => {
  it('stays quiet when the reader closes the pipe early', () => {
    const root = tempDir();
    // Far more than a pipe buffer (64 KiB), so writes are still pending when the reader leaves.
    for (let i = 0; i < 1000; i += 1) makeUnit(root, `${'long-name-'.repeat(20)}${i}`, { tail: 'x' });
    const errFile = join(tempDir(), 'stderr');
    const run = spawnSync(
      'bash',
      ['-c', `"${process.execPath}" "${BIN}" --root "${root}" --json 2>"${errFile}" | head -c 10 >/dev/null; echo "\${PIPESTATUS[0]}"`],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(readFileSync(errFile, 'utf8')).toBe('');
    expect(run.stdout.trim()).toBe('0');
  });
});

describe('usage', () => {
  it.each([
    [['--bogus']],
    [['--sort', 'bad']],
    [['--min-tail-bytes', '2.5']],
    [['--min-tail-bytes']],
    [['extra-operand']],
  ])('%j exits 2 with one line and no output', (argv) => {
    const run = runBin(argv);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^prun-report-state: [^\n]+\n$/);
  });

  it('--help exits 0 with the exit-code table; --version prints the package version', () => {
    const help = runBin(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toMatch(/^\s+1\s+some root or unit could not be fully observed/m);
    const version = runBin(['--version']);
    expect(version.status).toBe(0);
    expect(version.stdout).toBe('0.1.0\n');
  });
});

describe('a listing with a name that is not UTF-8', () => {
  it('is read as bytes: every unit is found, the odd one by its real bytes, in code point order', () => {
    const root = tempDir();
    makeUnit(root, 'a', { tail: 'aa' });
    makeUnit(root, 'z', { tail: 'zzz' });
    makeUnit(root, '\ufffd-real', { tail: 'r' });
    const odd = Buffer.concat([Buffer.from(`${root}/prun-task-`), Buffer.from([0xff, 0x62])]);
    mkdirSync(odd);
    writeFileSync(Buffer.concat([odd, Buffer.from('/tail')]), 'abcde');
    const { status, report } = runJson(root);
    expect(status).toBe(0);
    expect(report.units.map((u) => [u.unit.slice(root.length + 1), u.tail_bytes])).toEqual([
      ['prun-task-a', 2],
      ['prun-task-z', 3],
      // U+DCFF (the escape of byte 0xff) sorts before U+FFFD, as Python orders them.
      ['prun-task-\udcffb', 5],
      ['prun-task-\ufffd-real', 1],
    ]);
    expect(runBin(['--root', root, '--json']).stdout).toContain('/prun-task-\\udcffb"');
  });
});

describe('a report that cannot be written', () => {
  // /dev/full answers every write with ENOSPC: the run is exit 70 (kit's stream failure) with one
  // line on stderr saying why, in both output modes; a reader that goes away is not a failure.
  const full = existsSync('/dev/full') ? '/dev/full' : null;
  for (const json of [true, false]) {
    it.skipIf(full === null)(`${json ? '--json' : 'the table'} to a full device is exit 70 with one line naming the failure`, () => {
      const root = tempDir();
      makeUnit(root, 'u', { resultEntry: join(root, 'out', 'r.md'), resultBody: 'body' });
      const fd = openSync(full!, 'w');
      try {
        const run = spawnSync(process.execPath, [BIN, '--root', root, ...(json ? ['--json'] : [])], {
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
          stdio: ['ignore', fd, 'pipe'],
          encoding: 'utf8',
          timeout: 20_000,
        });
        expect(run.status).toBe(70);
        expect(run.stderr).toBe('prun-report-state: cannot write the report to stdout (no space left on device)\n');
      } finally {
        closeSync(fd);
      }
    });
  }

  it('a reader that stops early (a closed pipe) is not reported', () => {
    const root = tempDir();
    for (let i = 0; i < 400; i += 1) makeUnit(root, `u${i}`, { tail: 'x' });
    const run = spawnSync('sh', ['-c', `"$0" "$1" --root "$2" --json | head -c 1 >/dev/null`, process.execPath, BIN, root], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
  });
});
