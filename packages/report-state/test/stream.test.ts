// ReportWriter is the one layout of both outputs. Fed a record at a time into one buffer (as the bin
// feeds it while it sweeps), it must give byte for byte the document pyJsonDumps (json.dumps
// indent=2, ensure_ascii) writes for jsonDocument, and the table renderText gives, for every option
// combination; and the bin, which lays out a one-root path-order sweep as it goes, must print what
// the library's renderers print for the same tree.
import { afterAll, describe, expect, it } from 'vitest';
import { pyJsonDumps } from '@prun/kit/py';
import {
  BufferGather,
  ReportWriter,
  jsonDocument,
  buildRecord,
  buildReport,
  renderJson,
  renderText,
  selectShown,
  sweep,
  type DiscoveryError,
  type OutputChunk,
  type SortOrder,
  type UnitRecord,
} from '../src/index.js';
import { cleanupTempDirs, makeUnit, runBin, tempDir } from './helpers.js';

afterAll(cleanupTempDirs);

const BIN_NAME = 'prun-report-state';

/** Chunks with neighbours on the same stream merged: the bytes each stream gets, in order. */
function merged(chunks: readonly OutputChunk[]): OutputChunk[] {
  const out: OutputChunk[] = [];
  for (const chunk of chunks) {
    const last = out[out.length - 1];
    if (last !== undefined && last.stream === chunk.stream) last.text += chunk.text;
    else out.push({ ...chunk });
  }
  return out;
}

/** Records of every shape: errors (one, two), null target and tail, legacy pid, names to escape. */
function records(count: number, includeLegacyPid: boolean): UnitRecord[] {
  const list: UnitRecord[] = [];
  for (let i = 0; i < count; i += 1) {
    const name = i % 17 === 3 ? `prun-task-é-\u2028-${i}` : i % 19 === 4 ? `prun-task-nl\n-${i}` : `prun-task-u${String(i).padStart(6, '0')}`;
    const kind = i % 5;
    const record = buildRecord({
      unit: `/r/${name}`,
      outcome:
        kind === 0
          ? { pathState: 'resolved', result: 'present', target: `/r/results/${i}.md`, error: null }
          : kind === 1
            ? { pathState: 'absent-entry', result: 'missing', target: null, error: null }
            : kind === 2
              ? { pathState: 'unreadable', result: 'unknown', target: null, error: { stage: 'result-entry', error: 'PermissionError' } }
              : kind === 3
                ? { pathState: 'resolved', result: 'empty', target: `/r/ü/${i}`, error: null }
                : { pathState: 'invalid-entry', result: 'unknown', target: null, error: null },
      tail: i % 7 === 2 ? { bytes: null, error: { stage: 'tail', error: 'OSError "x"' } } : { bytes: (i * 7919) % 5000, error: null },
      ...(includeLegacyPid ? { legacyPid: i % 3 === 0 ? { value: null, error: null } : { value: `${4000 + i}`, error: null } } : {}),
    });
    list.push(record);
  }
  return list;
}

const DISCOVERY_ERRORS: DiscoveryError[] = [
  { stage: 'root', root: '/gone', error: 'FileNotFoundError' },
  { stage: 'unit-entry', unit: '/r/prun-task-ö', error: 'PermissionError' },
];

function streamed(input: {
  all: UnitRecord[];
  shown: UnitRecord[];
  json: boolean;
  summary: boolean;
  legacy: boolean;
  errors: DiscoveryError[];
}): { chunks: OutputChunk[]; partial: boolean } {
  // A small first buffer, so 1,500 records make it grow several times.
  const writer = new ReportWriter(
    { roots: ['/r', '/s'], discoveryErrors: input.errors, unitCount: input.all.length, includeLegacyPid: input.legacy, withSummary: input.summary },
    input.json,
    BIN_NAME,
    new BufferGather(16),
  );
  for (const record of input.all) writer.count(record);
  for (const record of input.shown) writer.show(record);
  const partial = writer.isPartial;
  const chunks = writer.end().map(({ stream, data }) => ({ stream, text: typeof data === 'string' ? data : Buffer.from(data).toString('utf8') }));
  return { chunks, partial };
}

describe('ReportWriter, fed a record at a time into one buffer', () => {
  const counts = [0, 1, 3, 1500];
  for (const count of counts) {
    for (const json of [false, true]) {
      for (const summary of [false, true]) {
        for (const legacy of [false, true]) {
          for (const errors of [[], DISCOVERY_ERRORS]) {
            for (const [sort, minTailBytes] of [['path', 0], ['tail-bytes-desc', 0], ['path', 2500], ['path', 1e9]] as Array<[SortOrder, number]>) {
              const label = `${count} units, ${json ? 'json' : 'text'}${summary ? ' --summary' : ''}${legacy ? ' --include-legacy-pid' : ''}, ${errors.length} discovery errors, --sort ${sort} --min-tail-bytes ${minTailBytes}`;
              it(label, () => {
                const all = records(count, legacy);
                const report = buildReport({
                  roots: ['/r', '/s'],
                  discoveryErrors: errors,
                  records: all,
                  display: { minTailBytes, sort },
                  withSummary: summary,
                  includeLegacyPid: legacy,
                });
                const shown = selectShown(all, { minTailBytes, sort });
                const out = streamed({ all, shown, json, summary, legacy, errors });
                // JSON against an independent layout: kit's json.dumps for the document as data.
                const expected: OutputChunk[] = json
                  ? [{ stream: 'stdout', text: `${pyJsonDumps(jsonDocument(report), { indent: 2 })}\n` }]
                  : renderText(report, BIN_NAME);
                expect(merged(out.chunks)).toEqual(merged(expected));
                if (json) expect(renderJson(report)).toBe(expected[0]!.text);
                expect(out.partial).toBe(errors.length > 0 || all.some((r) => r.errors.length > 0));
              });
            }
          }
        }
      }
    }
  }
});

describe('the bin, laying out a one-root sweep as it goes, prints the library renderers\' bytes', () => {
  const root = tempDir();
  // Enough units for the output to be written in several pieces, of several kinds.
  for (let i = 0; i < 900; i += 1) {
    const name = `u${String(i).padStart(4, '0')}${i % 50 === 7 ? '-é' : ''}`;
    if (i % 4 === 0) makeUnit(root, name, { tail: 'x'.repeat(i) });
    else if (i % 4 === 1) makeUnit(root, name, { resultEntry: `${root}/results/${i}.md\n`, resultBody: i % 8 === 1 ? '' : '# r\n', tail: 'y'.repeat(i % 13) });
    else if (i % 4 === 2) makeUnit(root, name, { resultEntry: 'relative/nope\n', tail: null });
    else makeUnit(root, name, { resultEntry: `${root}/missing/${i}\n`, tail: 'z' });
  }
  makeUnit(root, 'dirtail', { tail: null });
  makeUnit(root, 'dirtail/tail', { tail: null });
  for (const json of [false, true]) {
    for (const extra of [[], ['--summary'], ['--min-tail-bytes', '300'], ['--summary', '--min-tail-bytes', '300']]) {
      it(`${json ? '--json ' : ''}${extra.join(' ')}`, () => {
        const run = runBin(['--root', root, ...(json ? ['--json'] : []), ...extra]);
        const observed = sweep([root], { includeLegacyPid: false });
        const minTailBytes = extra.includes('--min-tail-bytes') ? 300 : 0;
        const report = buildReport({
          ...observed,
          display: { minTailBytes, sort: 'path' },
          withSummary: extra.includes('--summary'),
          includeLegacyPid: false,
        });
        const chunks = json ? [{ stream: 'stdout' as const, text: renderJson(report) }] : renderText(report, BIN_NAME);
        expect(run.stdout).toBe(chunks.filter((c) => c.stream === 'stdout').map((c) => c.text).join(''));
        expect(run.stderr).toBe(json ? '' : chunks.filter((c) => c.stream === 'stderr').map((c) => c.text).join(''));
        expect(run.status).toBe(1);
        // More than a pipe's 64 KiB, written whole.
        if (minTailBytes === 0) expect(run.stdout.length).toBeGreaterThan(1 << 16);
      });
    }
  }
});
