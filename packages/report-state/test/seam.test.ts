// The upstream tests monkey-patched os.stat / os.open / classify_result. Here the same faults
// go through the library's injectable file system facade.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STATE_FILES, readSmallFile } from '@prun/unit-state';
import {
  buildReport,
  errorName,
  legacyPidOf,
  tailBytesOf,
  isPartial,
  nodeObservationFs,
  renderJson,
  sweep,
  type FsPath,
  type ObservationFs,
} from '../src/index.js';
import { cleanupTempDirs, makeUnit, tempDir } from './helpers.js';

afterEach(cleanupTempDirs);

function systemError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code, errno: -13, syscall: 'stat' });
}

const asText = (path: FsPath): string => (typeof path === 'string' ? path : path.toString('utf8'));

function faultyFs(faults: {
  stat?: (path: string) => Error | undefined;
  readEntry?: (unit: string, name: string) => Error | 'denied' | undefined;
  readdir?: (dir: string) => Error | undefined;
}): ObservationFs {
  return {
    readdir: (dir) => {
      const fault = faults.readdir?.(asText(dir));
      if (fault) throw fault;
      return nodeObservationFs.readdir(dir);
    },
    stat: (path) => {
      const fault = faults.stat?.(asText(path));
      if (fault) throw fault;
      return nodeObservationFs.stat(path);
    },
    readEntry: (unit, name) => {
      const fault = faults.readEntry?.(asText(unit), name);
      if (fault === 'denied') return { ok: false, problem: 'EACCES' };
      if (fault) throw fault;
      return nodeObservationFs.readEntry(unit, name);
    },
  };
}

function report(root: string, fs: ObservationFs, includeLegacyPid = false) {
  const observed = sweep([root], { includeLegacyPid }, fs);
  const built = buildReport({
    ...observed,
    display: { minTailBytes: 0, sort: 'path' },
    withSummary: true,
    includeLegacyPid,
  });
  const byName = new Map(built.records.map((r) => [r.unit.slice(r.unit.lastIndexOf('/') + 1), r]));
  return { built, byName, partial: isPartial(built) };
}

describe('observation failures (upstream ObservationFailureTests, injected)', () => {
  it('a denied stat on a live target is unknown with a result-target error, not missing', () => {
    const root = tempDir();
    const target = join(root, 'out', 'r.md');
    makeUnit(root, 'u', { resultEntry: target, resultBody: 'body' });
    const { built, byName, partial } = report(root, faultyFs({ stat: (p) => (p === target ? systemError('EACCES') : undefined) }));
    const unit = byName.get('prun-task-u')!;
    expect([unit.result_path_state, unit.result, unit.result_target]).toEqual(['resolved', 'unknown', target]);
    expect(unit.errors).toEqual([{ stage: 'result-target', error: 'PermissionError' }]);
    expect(partial).toBe(true);
    expect(built.summary?.missing_or_empty_result_units).toBe(0);
  });

  it('a denied entry read is unreadable, not absent', () => {
    const root = tempDir();
    makeUnit(root, 'u', { resultEntry: join(root, 'r.md'), resultBody: 'x' });
    const { byName, partial } = report(
      root,
      faultyFs({ readEntry: (_u, name) => (name === STATE_FILES.resultFile ? 'denied' : undefined) }),
    );
    const unit = byName.get('prun-task-u')!;
    expect([unit.result_path_state, unit.result]).toEqual(['unreadable', 'unknown']);
    expect(unit.errors.map((e) => e.stage)).toEqual(['result-entry']);
    expect(partial).toBe(true);
  });

  it('a denied legacy pid read is recorded, not swallowed', () => {
    const root = tempDir();
    makeUnit(root, 'u', { dispatchPid: '4242' });
    const { byName, partial } = report(
      root,
      faultyFs({ readEntry: (_u, name) => (name === STATE_FILES.dispatchPid ? 'denied' : undefined) }),
      true,
    );
    const unit = byName.get('prun-task-u')!;
    expect(unit.legacy_pid_unverified).toBeNull();
    expect(unit.errors).toEqual([{ stage: 'legacy-pid', error: 'PermissionError' }]);
    expect(partial).toBe(true);
  });

  it('a matching entry that cannot be stated is a discovery error, and the rest is still inspected', () => {
    const root = tempDir();
    makeUnit(root, 'ok');
    const denied = makeUnit(root, 'denied');
    const { built, partial } = report(root, faultyFs({ stat: (p) => (p === denied ? systemError('EACCES') : undefined) }));
    expect(built.records).toHaveLength(1);
    expect(built.discoveryErrors).toEqual([{ stage: 'unit-entry', unit: denied, error: 'PermissionError' }]);
    expect(partial).toBe(true);
  });

  it('a root that cannot be listed is reported, not read as an empty corpus', () => {
    const root = tempDir();
    makeUnit(root, 'u');
    const { built, partial } = report(root, faultyFs({ readdir: (d) => (d === root ? systemError('EACCES') : undefined) }));
    expect(built.records).toHaveLength(0);
    expect(built.discoveryErrors).toEqual([{ stage: 'root', root, error: 'PermissionError' }]);
    expect(partial).toBe(true);
  });

  it('every documented field survives the defensive path when classification throws', () => {
    const root = tempDir();
    makeUnit(root, 'u', { tail: 'x', resultEntry: '/somewhere' });
    const { built, byName, partial } = report(
      root,
      faultyFs({ readEntry: (_u, name) => (name === STATE_FILES.resultFile ? new TypeError('boom') : undefined) }),
    );
    const unit = byName.get('prun-task-u')!;
    expect(Object.keys(unit)).toEqual(['unit', 'errors', 'result_path_state', 'result', 'result_target', 'tail_bytes']);
    expect(unit).toMatchObject({ result_path_state: 'unreadable', result: 'unknown', result_target: null, tail_bytes: 1 });
    expect(unit.errors).toEqual([{ stage: 'result', error: 'TypeError' }]);
    expect(partial).toBe(true);
    expect(built.records).toHaveLength(1);
  });

  it('the JSON is complete when one unit fails: valid, both units, exactly one with errors', () => {
    const root = tempDir();
    const bad = makeUnit(root, 'bad', { resultEntry: '/x' });
    makeUnit(root, 'good', { resultEntry: '/x' });
    const observed = sweep(
      [root],
      { includeLegacyPid: false },
      faultyFs({ readEntry: (u) => (u === bad ? new Error('unexpected') : undefined) }),
    );
    const built = buildReport({ ...observed, display: { minTailBytes: 0, sort: 'path' }, withSummary: false, includeLegacyPid: false });
    const parsed = JSON.parse(renderJson(built)) as { units: { errors: unknown[] }[] };
    expect(parsed.units).toHaveLength(2);
    expect(parsed.units.filter((u) => u.errors.length > 0)).toHaveLength(1);
    expect(isPartial(built)).toBe(true);
  });

  it('a failing tail stat is the tail stage, after the result error', () => {
    const root = tempDir();
    const unit = makeUnit(root, 'u', { tail: 'abc' });
    const { byName } = report(root, faultyFs({ stat: (p) => (p === join(unit, STATE_FILES.tail) ? systemError('EIO') : undefined) }));
    expect(byName.get('prun-task-u')).toMatchObject({ tail_bytes: null, errors: [{ stage: 'tail', error: 'OSError' }] });
  });
});

describe('entry reading through unit-state', () => {
  it('reports an oversized entry instead of truncating it, and accepts exactly the cap', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'big'), 'x'.repeat(128 * 1024));
    expect(readSmallFile(join(dir, 'big'))).toEqual({ ok: false, problem: 'EntryTooLarge' });
    const path = join(dir, 'target.md');
    writeFileSync(join(dir, 'cap'), path.padEnd(65536, ' '));
    const read = nodeObservationFs.readEntry(dir, 'cap');
    expect(read.ok && read.text.trimEnd()).toBe(path);
  });

  it('reads entries of a unit whose name is not UTF-8 through its raw bytes', () => {
    const root = tempDir();
    const unit = Buffer.concat([Buffer.from(`${root}/prun-task-`), Buffer.from([0xff, 0xfe])]);
    mkdirSync(unit);
    writeFileSync(Buffer.concat([unit, Buffer.from('/result-file')]), 'r.md\n');
    const read = nodeObservationFs.readEntry(unit, STATE_FILES.resultFile);
    expect(read).toMatchObject({ ok: true, text: 'r.md\n' });
    expect(nodeObservationFs.readEntry(unit, STATE_FILES.dispatchPid)).toEqual({ ok: false, problem: 'absent' });
  });

  it("names failures by Python's exception class, as schema v1 and the original do", () => {
    expect(errorName(systemError('ENOTDIR'))).toBe('NotADirectoryError');
    expect(errorName(systemError('ENOENT'))).toBe('FileNotFoundError');
    expect(errorName(systemError('EACCES'))).toBe('PermissionError');
    expect(errorName(systemError('EPERM'))).toBe('PermissionError');
    expect(errorName(systemError('EISDIR'))).toBe('IsADirectoryError');
    expect(errorName(systemError('ELOOP'))).toBe('OSError');
    expect(errorName(Object.assign(new TypeError('nul'), { code: 'ERR_INVALID_ARG_VALUE' }))).toBe('ValueError');
    expect(errorName(new RangeError('x'))).toBe('RangeError');
    expect(errorName('weird')).toBe('Exception');
  });

  it('entry problems and stat codes injected as Node codes come out as Python names; our own names stay', () => {
    expect(legacyPidOf({ ok: false, problem: 'EACCES' }).error).toEqual({ stage: 'legacy-pid', error: 'PermissionError' });
    expect(legacyPidOf({ ok: false, problem: 'NotARegularFile' }).error).toEqual({ stage: 'legacy-pid', error: 'NotARegularFile' });
    expect(legacyPidOf({ ok: false, problem: 'EntryTooLarge' }).error).toEqual({ stage: 'legacy-pid', error: 'EntryTooLarge' });
    expect(tailBytesOf({ kind: 'error', code: 'EISDIR' }).error).toEqual({ stage: 'tail', error: 'IsADirectoryError' });
  });
});

describe("the sweep's own node:fs reading (the fast path) and inspectUnit through the seam", () => {
  // sweep reads a unit itself when given nodeObservationFs and leaves anything unusual to
  // inspectUnit; any other ObservationFs (here one that only forwards) always goes through the
  // seam. Every kind of unit must come out the same both ways, errors included.
  const forwarding: ObservationFs = {
    readdir: (dir) => nodeObservationFs.readdir(dir),
    listDir: (dir) => nodeObservationFs.listDir!(dir),
    stat: (path) => nodeObservationFs.stat(path),
    readEntry: (unit, name) => nodeObservationFs.readEntry(unit, name),
  };

  function corpus(withUndecodableName = true): string {
    const root = tempDir();
    const out = join(root, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'present.md'), 'body');
    writeFileSync(join(out, 'empty.md'), '');
    makeUnit(root, 'present', { resultEntry: `${out}/present.md\n` });
    makeUnit(root, 'empty', { resultEntry: `${out}/empty.md` });
    makeUnit(root, 'missing', { resultEntry: `  ${out}/never.md \r\n` });
    makeUnit(root, 'absent-entry', { tail: 'x'.repeat(700) });
    makeUnit(root, 'blank-entry', { resultEntry: ' \n\t' });
    makeUnit(root, 'relative', { resultEntry: 'results/r.md\n', resultBody: 'in unit' });
    makeUnit(root, 'relative-missing', { resultEntry: './gone.md' });
    makeUnit(root, 'escaping', { resultEntry: '../elsewhere.md' });
    makeUnit(root, 'target-dir', { resultEntry: out });
    makeUnit(root, 'through-a-file', { resultEntry: `${out}/present.md/below` });
    makeUnit(root, 'nul', { resultEntry: `${out}/a\u0000b` });
    makeUnit(root, 'oversized', { resultEntry: `${out}/present.md`.padEnd(65537, ' ') });
    makeUnit(root, 'at-the-cap', { resultEntry: `${out}/present.md`.padEnd(65536, ' ') });
    makeUnit(root, 'two-lines', { resultEntry: `${out}/present.md\n${out}/empty.md\n` });
    // What the fast path leaves out before decoding (ASCII whitespace) beside what only a decoder
    // or Python's strip can tell: a cut UTF-8 sequence, and whitespace beyond ASCII (U+0085, U+3000).
    makeUnit(root, 'cut-utf8', { resultEntry: Buffer.concat([Buffer.from(`\x1c ${out}/cut`), Buffer.from([0xe2, 0x82]), Buffer.from('\n\x1f')]) });
    makeUnit(root, 'wide-space', { resultEntry: `\u3000${out}/present.md\u0085\n` });
    makeUnit(root, 'space-only-wide', { resultEntry: ' \u00a0\n' });
    const loop = join(root, 'loop');
    symlinkSync(loop, loop);
    makeUnit(root, 'loop', { resultEntry: loop });
    mkdirSync(join(makeUnit(root, 'entry-dir', { tail: null }), STATE_FILES.resultFile));
    const fifoUnit = makeUnit(root, 'entry-fifo');
    const fifo = spawnSync('mkfifo', [join(fifoUnit, STATE_FILES.resultFile)]);
    if (fifo.status !== 0) throw new Error('mkfifo failed: the FIFO case cannot be built');
    mkdirSync(join(makeUnit(root, 'tail-dir', { resultEntry: `${out}/present.md`, tail: null }), STATE_FILES.tail));
    symlinkSync(makeUnit(join(root, 'real'), 'linked', { resultEntry: `${out}/present.md` }), join(root, 'prun-task-via-link'));
    symlinkSync(join(root, 'nowhere'), join(root, 'prun-task-dangling'));
    // A regular file whose stat says 0 bytes though it holds text (procfs): read to its end all the
    // same, not stopped at the size fstat gave.
    symlinkSync('/proc/version', join(makeUnit(root, 'sizeless-entry'), STATE_FILES.resultFile));
    // A name that is not UTF-8 sends the whole root through the seam's general listing (as bytes);
    // without it, discovery lists the root itself (listRootAsText), and must list it alike.
    if (!withUndecodableName) return root;
    const odd = Buffer.concat([Buffer.from(`${root}/prun-task-odd-`), Buffer.from([0xff])]);
    mkdirSync(odd);
    writeFileSync(Buffer.concat([odd, Buffer.from('/result-file')]), `${out}/present.md`);
    return root;
  }

  it('lists a root whose names are all UTF-8 as the seam does: symlinked, dangling and non-directory entries, a root given twice', () => {
    const root = corpus(false);
    writeFileSync(join(root, 'prun-task-a-file'), 'not a unit');
    symlinkSync(join(root, 'prun-task-a-file'), join(root, 'prun-task-link-to-file'));
    const quick = sweep([root, root], { includeLegacyPid: false }, nodeObservationFs);
    expect(quick).toEqual(sweep([root, root], { includeLegacyPid: false }, forwarding));
    expect(quick.records.some((r) => r.unit === join(root, 'prun-task-via-link'))).toBe(true);
    const listed = new Set(quick.records.map((r) => r.unit));
    expect(listed.has(join(root, 'prun-task-a-file')) || listed.has(join(root, 'prun-task-link-to-file'))).toBe(false);
  });

  it.each([false, true])('gives the same records, errors and discovery errors (legacy pid %s)', (includeLegacyPid) => {
    const root = corpus();
    const openFds = () => readdirSync('/proc/self/fd').length;
    const before = openFds();
    const quick = sweep([root, root], { includeLegacyPid }, nodeObservationFs);
    expect(openFds()).toBe(before);
    const seam = sweep([root, root], { includeLegacyPid }, forwarding);
    expect(quick).toEqual(seam);
    // The corpus reaches every classification the table has, so a path that gives up on
    // everything, or on nothing, is not what is compared here.
    const states = new Set(quick.records.map((r) => `${r.result_path_state}/${r.result}`));
    expect([...states].sort()).toEqual(
      ['absent-entry/unknown', 'invalid-entry/unknown', 'resolved/empty', 'resolved/missing', 'resolved/present', 'resolved/unknown', 'unreadable/unknown'],
    );
    const errors = new Set(quick.records.flatMap((r) => r.errors.map((e) => `${e.stage}:${e.error}`)));
    for (const expected of ['result-entry:NotARegularFile', 'result-entry:EntryTooLarge', 'result:ValueError', 'result-target:NotARegularFile', 'result-target:NotADirectoryError', 'result-target:OSError', 'tail:NotARegularFile']) {
      expect(errors).toContain(expected);
    }
    expect(quick.discoveryErrors).toEqual([{ stage: 'unit-entry', unit: join(root, 'prun-task-dangling'), error: 'FileNotFoundError' }]);
    const sizeless = join(root, 'prun-task-sizeless-entry');
    expect(quick.records.find((r) => r.unit === sizeless)?.result_target).toBe(join(sizeless, readFileSync('/proc/version', 'utf8').trim()));
  });
});

describe('path order known from the sweep', () => {
  it('one root is listed in path order and trusted as such; roots given out of order are sorted', () => {
    const parent = tempDir();
    const early = join(parent, 'a');
    const late = join(parent, 'b');
    makeUnit(late, 'x');
    makeUnit(early, 'y');
    // U+FFFD sorts before U+1F600 by code point, after it by UTF-16 unit: discovery's order is
    // the code point order the report needs.
    makeUnit(early, 'z\u{1f600}');
    makeUnit(early, 'z\ufffd');
    const one = sweep([early], { includeLegacyPid: false }, nodeObservationFs);
    expect(one.inPathOrder).toBe(true);
    expect(one.records.map((r) => r.unit.slice(early.length + 1))).toEqual(['prun-task-y', 'prun-task-z\ufffd', 'prun-task-z\u{1f600}']);
    // Without a U+FFFD (which sends a root through the seam's listing as bytes), discovery's own
    // listing sorts names holding a surrogate pair by code point too: U+FFEE before U+1F600.
    const astral = join(parent, 'c');
    makeUnit(astral, 'z\u{1f600}');
    makeUnit(astral, 'z\uffee');
    makeUnit(astral, 'y');
    expect(sweep([astral], { includeLegacyPid: false }, nodeObservationFs).records.map((r) => r.unit.slice(astral.length + 1))).toEqual([
      'prun-task-y',
      'prun-task-z\uffee',
      'prun-task-z\u{1f600}',
    ]);
    const two = sweep([late, early], { includeLegacyPid: false }, nodeObservationFs);
    expect(two.inPathOrder).toBe(false);
    const shown = buildReport({ ...two, display: { minTailBytes: 0, sort: 'path' }, withSummary: false, includeLegacyPid: false }).shown;
    expect(shown.map((r) => r.unit.slice(parent.length + 1))).toEqual(['a/prun-task-y', 'a/prun-task-z\ufffd', 'a/prun-task-z\u{1f600}', 'b/prun-task-x']);
  });
});
