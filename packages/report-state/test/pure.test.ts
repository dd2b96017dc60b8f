import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EntryRead } from '@prun/unit-state';
import { printable } from '@prun/kit/cli';
import { pyJsonDumps } from '@prun/kit/py';
import {
  LEGAL_RESULT_PAIRS,
  SAFETY_SENTENCE,
  jsonDocument,
  buildRecord,
  buildReport,
  buildSummary,
  classifyTarget,
  compareCodePoints,
  decodeSurrogateEscape,
  formatCounts,
  formatMiB,
  groupThousands,
  isLegalResultPair,
  isUtf8,
  legacyPidOf,
  parseArgs,
  renderJson,
  renderText,
  resolveEntry,
  selectShown,
  tailBytesOf,
  toAsciiJson,
  type ResultOutcome,
  type StatFact,
  type UnitRecord,
} from '../src/index.js';

const UNIT = '/r/prun-task-u';
const text = (t: string): EntryRead => ({ ok: true, text: t, bytes: Buffer.from(t) });
const problem = (p: string): EntryRead => ({ ok: false, problem: p });

function classify(entry: EntryRead, fact: StatFact): ResultOutcome {
  const step = resolveEntry(entry, UNIT);
  return 'pathState' in step ? step : classifyTarget(step.target, fact);
}

function record(partial: Partial<UnitRecord> & { unit: string }): UnitRecord {
  return {
    errors: [],
    result_path_state: 'resolved',
    result: 'present',
    result_target: null,
    tail_bytes: 0,
    ...partial,
  };
}

describe('classification (result-file entry and target facts)', () => {
  const regular = (size: number): StatFact => ({ kind: 'regular', size });
  it.each([
    ['absent result-file', problem('absent'), regular(1), ['absent-entry', 'unknown', null, null]],
    ['unreadable entry', problem('EACCES'), regular(1), ['unreadable', 'unknown', null, { stage: 'result-entry', error: 'PermissionError' }]],
    ['entry not regular', problem('NotARegularFile'), regular(1), ['unreadable', 'unknown', null, { stage: 'result-entry', error: 'NotARegularFile' }]],
    ['entry too large', problem('EntryTooLarge'), regular(1), ['unreadable', 'unknown', null, { stage: 'result-entry', error: 'EntryTooLarge' }]],
    ['empty entry', text(''), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['whitespace-only entry', text(' \r\n\t\u2003'), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['escaping entry', text('../../etc/passwd'), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['entry naming the unit itself', text('.'), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['entry that normalizes to the unit', text('a/..'), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['sibling unit by prefix', text('../prun-task-u2/r.md'), regular(1), ['invalid-entry', 'unknown', null, null]],
    ['relative entry inside', text('./r.md\n'), regular(3), ['resolved', 'present', `${UNIT}/r.md`, null]],
    ['relative entry with a trailing slash', text('sub/'), regular(3), ['resolved', 'present', `${UNIT}/sub`, null]],
    ['absolute entry elsewhere, kept as written', text('/x/../y/r.md'), regular(3), ['resolved', 'present', '/x/../y/r.md', null]],
    ['missing target', text('/x/r.md'), { kind: 'absent' }, ['resolved', 'missing', '/x/r.md', null]],
    ['denied target', text('/x/r.md'), { kind: 'error', code: 'EACCES' }, ['resolved', 'unknown', '/x/r.md', { stage: 'result-target', error: 'PermissionError' }]],
    ['directory target', text('/x/d'), { kind: 'not-regular' }, ['resolved', 'unknown', '/x/d', { stage: 'result-target', error: 'NotARegularFile' }]],
    ['empty target', text('/x/e.md'), regular(0), ['resolved', 'empty', '/x/e.md', null]],
    ['multi-line entry keeps its inner newline', text('/x/a\n/x/b\n'), { kind: 'absent' }, ['resolved', 'missing', '/x/a\n/x/b', null]],
  ] as const)('%s', (_name, entry, fact, expected) => {
    const outcome = classify(entry, fact);
    expect([outcome.pathState, outcome.result, outcome.target, outcome.error]).toEqual(expected);
  });

  it('never emits a pair outside the exported legal table, whatever it observes', () => {
    const entryArb = fc.oneof(
      fc.string().map(text),
      fc.constantFrom('absent', 'NotARegularFile', 'EntryTooLarge', 'EACCES', 'EIO').map(problem),
      fc.constantFrom('/abs/r.md', './r.md', '..', '../x', 'a/b/../c', '.', '').map(text),
    );
    const factArb = fc.oneof(
      fc.nat().map((size): StatFact => ({ kind: 'regular', size })),
      fc.constant<StatFact>({ kind: 'not-regular' }),
      fc.constant<StatFact>({ kind: 'absent' }),
      fc.constantFrom('EACCES', 'ELOOP', 'ENOTDIR').map((code): StatFact => ({ kind: 'error', code })),
    );
    fc.assert(
      fc.property(entryArb, factArb, (entry, fact) => {
        const outcome = classify(entry, fact);
        expect(isLegalResultPair(outcome.pathState, outcome.result)).toBe(true);
        // A failed observation is never reported as an outcome.
        if (outcome.error !== null) expect(outcome.result).toBe('unknown');
      }),
    );
    expect(LEGAL_RESULT_PAIRS['absent-entry']).toEqual(['unknown']);
    expect(isLegalResultPair('absent-entry', 'missing')).toBe(false);
  });

  it('measures the tail: absent is 0, not regular or failed is null with an error', () => {
    expect(tailBytesOf({ kind: 'regular', size: 7 })).toEqual({ bytes: 7, error: null });
    expect(tailBytesOf({ kind: 'absent' })).toEqual({ bytes: 0, error: null });
    expect(tailBytesOf({ kind: 'not-regular' })).toEqual({ bytes: null, error: { stage: 'tail', error: 'NotARegularFile' } });
    expect(tailBytesOf({ kind: 'error', code: 'ELOOP' })).toEqual({ bytes: null, error: { stage: 'tail', error: 'OSError' } });
  });

  it('reads the legacy pid as stripped text, never as a number', () => {
    expect(legacyPidOf(text(' 4242\r\n'))).toEqual({ value: '4242', error: null });
    expect(legacyPidOf(text('\n'))).toEqual({ value: '', error: null });
    expect(legacyPidOf(problem('absent'))).toEqual({ value: null, error: null });
    expect(legacyPidOf(problem('EntryTooLarge'))).toEqual({ value: null, error: { stage: 'legacy-pid', error: 'EntryTooLarge' } });
  });
});

describe('records and summary', () => {
  it('builds records with the contract key order and error order result, tail, legacy-pid', () => {
    const built = buildRecord({
      unit: UNIT,
      outcome: { pathState: 'unreadable', result: 'unknown', target: null, error: { stage: 'result-entry', error: 'PermissionError' } },
      tail: { bytes: null, error: { stage: 'tail', error: 'NotARegularFile' } },
      legacyPid: { value: null, error: { stage: 'legacy-pid', error: 'OSError' } },
    });
    expect(Object.keys(built)).toEqual([
      'unit',
      'errors',
      'result_path_state',
      'result',
      'result_target',
      'tail_bytes',
      'legacy_pid_unverified',
    ]);
    expect(built.errors.map((e) => e.stage)).toEqual(['result-entry', 'tail', 'legacy-pid']);
    const without = buildRecord({
      unit: UNIT,
      outcome: { pathState: 'absent-entry', result: 'unknown', target: null, error: null },
      tail: { bytes: 0, error: null },
    });
    expect('legacy_pid_unverified' in without).toBe(false);
  });

  it('counts bytes in two disjoint counters over every record, first-seen key order', () => {
    const records = [
      record({ unit: '/r/a', result: 'unknown', result_path_state: 'absent-entry', tail_bytes: 200 }),
      record({ unit: '/r/b', result: 'missing', tail_bytes: 100 }),
      record({ unit: '/r/c', result: 'present', tail_bytes: 400 }),
      record({ unit: '/r/d', result: 'empty', tail_bytes: 3 }),
      record({ unit: '/r/e', result: 'unknown', result_path_state: 'unreadable', tail_bytes: null }),
      record({ unit: '/r/f', result: 'missing', tail_bytes: 0 }),
    ];
    const summary = buildSummary(records);
    expect(Object.keys(summary)).toEqual([
      'units',
      'by_result',
      'by_path_state',
      'missing_or_empty_result_bytes',
      'missing_or_empty_result_units',
      'unresolved_bytes',
      'unresolved_units',
    ]);
    expect(summary).toEqual({
      units: 6,
      by_result: { unknown: 2, missing: 2, present: 1, empty: 1 },
      by_path_state: { 'absent-entry': 1, resolved: 4, unreadable: 1 },
      missing_or_empty_result_bytes: 103,
      missing_or_empty_result_units: 2,
      unresolved_bytes: 200,
      unresolved_units: 1,
    });
    expect(Object.keys(summary.by_result)).toEqual(['unknown', 'missing', 'present', 'empty']);
  });

  it('orders by path whatever order the records come in: sorted, roots out of order, surrogates', () => {
    const units = (list: UnitRecord[]): string[] => selectShown(list, { minTailBytes: 0, sort: 'path' }).map((r) => r.unit);
    const sorted = ['/a/prun-task-1', '/a/prun-task-2', '/b/prun-task-1'];
    expect(units(sorted.map((unit) => record({ unit })))).toEqual(sorted);
    // Two roots given as /b then /a: discovery order is not path order.
    expect(units(['/b/prun-task-1', '/a/prun-task-1', '/a/prun-task-2'].map((unit) => record({ unit })))).toEqual(sorted);
    // In UTF-16 order (as discovery might list them) but not in code point order: U+FF5E sorts before U+1F600.
    const astral = ['/r/prun-task-\u{1f600}', '/r/prun-task-\uff5e'];
    expect(units(astral.map((unit) => record({ unit })))).toEqual([...astral].reverse());
    // Equal paths (the same unit given twice cannot happen, but the order must still be stable).
    expect(units([record({ unit: '/r/prun-task-x', tail_bytes: 1 }), record({ unit: '/r/prun-task-x', tail_bytes: 2 })]).length).toBe(2);
  });

  it('filters for display only and sorts by path or by tail bytes (null as 0), ties by path', () => {
    const records = [
      record({ unit: '/r/prun-task-c', tail_bytes: 5 }),
      record({ unit: '/r/prun-task-a', tail_bytes: null }),
      record({ unit: '/r/prun-task-B', tail_bytes: 5 }),
      record({ unit: '/r/prun-task-d', tail_bytes: 50 }),
    ];
    expect(selectShown(records, { minTailBytes: 0, sort: 'path' }).map((r) => r.unit.slice(13))).toEqual(['B', 'a', 'c', 'd']);
    expect(selectShown(records, { minTailBytes: 0, sort: 'tail-bytes-desc' }).map((r) => r.unit.slice(13))).toEqual(['d', 'B', 'c', 'a']);
    expect(selectShown(records, { minTailBytes: 5, sort: 'path' }).map((r) => r.unit.slice(13))).toEqual(['B', 'c', 'd']);
    expect(selectShown(records, { minTailBytes: 1, sort: 'path' }).some((r) => r.tail_bytes === null)).toBe(false);
  });
});

describe('text formatting', () => {
  it('groups thousands and rounds MiB like Python, exact ties to even', () => {
    expect(groupThousands(0)).toBe('0');
    expect(groupThousands(1500)).toBe('1,500');
    expect(groupThousands(2000000)).toBe('2,000,000');
    expect(formatMiB(2000003)).toBe('1.9');
    expect(formatMiB(9)).toBe('0.0');
    // 0.25 and 0.75 MiB are exact binary ties: Python prints 0.2 and 0.8.
    expect(formatMiB(262144)).toBe('0.2');
    expect(formatMiB(786432)).toBe('0.8');
    expect(formatMiB(262145)).toBe('0.3');
    expect(formatMiB(25.5 * 1048576)).toBe('25.5');
  });

  it('prints counts as key=value pairs', () => {
    expect(formatCounts({ unknown: 7, empty: 1 })).toBe('unknown=7 empty=1');
    expect(formatCounts({})).toBe('(none)');
  });

  it('lays out the table at the widths of the original and truncates only the unit name', () => {
    const report = buildReport({
      roots: ['/r'],
      discoveryErrors: [],
      records: [
        record({ unit: '/r/prun-task-present', tail_bytes: 1500, legacy_pid_unverified: '4242' }),
        record({
          unit: '/r/prun-task-this-is-a-very-long-unit-name-that-exceeds-the-width',
          result: 'unknown',
          result_path_state: 'unreadable',
          tail_bytes: null,
          legacy_pid_unverified: '',
          errors: [{ stage: 'result-entry', error: 'NotARegularFile' }],
        }),
      ],
      display: { minTailBytes: 0, sort: 'path' },
      withSummary: false,
      includeLegacyPid: true,
    });
    const chunks = renderText(report, 'bin');
    expect(chunks.map((c) => c.stream)).toEqual(['stdout', 'stdout', 'stderr']);
    const out = chunks[0]!.text.split('\n');
    expect(out[0]).toBe(
      'unit                                                 result    path           tail bytes  legacy_pid_unverified',
    );
    expect(out[0]).toHaveLength(111);
    expect(out[1]).toBe('-'.repeat(111));
    expect(out[2]).toBe(
      'prun-task-present                                    present   resolved            1,500  4242',
    );
    expect(out[3]).toBe(
      'prun-task-this-is-a-very-long-unit-name-that-exceeds unknown   unreadable              ?  -',
    );
    expect(out[4]).toBe('    error [result-entry]: NotARegularFile');
  });
});

describe('text table lines', () => {
  // The rule, written out the slow way: the base name escaped by printable(), cut to 52 code
  // points and padded to them, then the padded result and path words and the grouped bytes.
  const expectedLine = (r: UnitRecord): string => {
    const name = [...printable(r.unit.slice(r.unit.lastIndexOf('/') + 1))].slice(0, 52);
    const bytes = r.tail_bytes === null ? '?' : r.tail_bytes.toLocaleString('en-US');
    return `${name.join('')}${' '.repeat(52 - name.length)} ${r.result.padEnd(9)} ${r.result_path_state.padEnd(13)} ${bytes.padStart(11)}`;
  };
  const tableLines = (records: UnitRecord[]): string[] =>
    renderText(
      buildReport({ roots: ['/r'], discoveryErrors: [], records, display: { minTailBytes: 0, sort: 'path' }, withSummary: false, includeLegacyPid: false }),
      'bin',
    )[0]!.text.split('\n').slice(2, -1);

  it('measures, cuts and pads names by code point, escaped first, ASCII or not', () => {
    const names = [
      'prun-task-a',
      `prun-task-${'x'.repeat(41)}`, // 51 characters
      `prun-task-${'x'.repeat(42)}`, // exactly the column
      `prun-task-${'x'.repeat(60)}`,
      `prun-task-${'é'.repeat(50)}`,
      `prun-task-${'😀'.repeat(45)}`,
      'prun-task-tab\there\\and-backslash',
      `prun-task-${'\u0001'.repeat(20)}`,
      'prun-task-\u2028line',
      'prun-task-\udcffbyte',
    ];
    const records = names.map((name, i) => record({ unit: `/r/${name}`, tail_bytes: i * 999_999 }));
    // Order is the sort's business (tested above): the lines are compared as a set.
    expect(tableLines(records).sort()).toEqual(records.map(expectedLine).sort());
  });

  it('matches the rule for any name and tail size', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), fc.option(fc.integer({ min: 0, max: 2 ** 53 - 1 })), (name, bytes) => {
        const r = record({ unit: `/r/prun-task-${name.replaceAll('/', '_')}`, tail_bytes: bytes });
        expect(tableLines([r])).toEqual([expectedLine(r)]);
      }),
    );
  });
});

describe('JSON rendering', () => {
  it('escapes non-ASCII like Python (lone surrogates and astral pairs included)', () => {
    expect(toAsciiJson(JSON.stringify('é\udcff😀'))).toBe('"\\u00e9\\udcff\\ud83d\\ude00"');
    const json = renderJson(
      buildReport({
        roots: ['/r'],
        discoveryErrors: [],
        records: [],
        display: { minTailBytes: 0, sort: 'path' },
        withSummary: true,
        includeLegacyPid: false,
      }),
    );
    expect(json.endsWith('}\n')).toBe(true);
    const parsed = JSON.parse(json) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['schema_version', 'roots', 'unit_count', 'discovery_errors', 'units', 'safety', 'summary']);
    expect(parsed.safety).toBe(SAFETY_SENTENCE);
    expect(json).toContain('\n  "units": [],\n');
  });
});

describe('names that are not UTF-8', () => {
  it('decodes like surrogateescape: valid sequences as text, every stray byte as U+DC00+b', () => {
    expect(decodeSurrogateEscape(Buffer.from([0x61, 0xff, 0xfe, 0x62]))).toBe('a\udcff\udcfeb');
    expect(decodeSurrogateEscape(Buffer.from([0xe2, 0x82, 0x41]))).toBe('\udce2\udc82A');
    expect(decodeSurrogateEscape(Buffer.from([0xe2, 0xe2, 0x82, 0xac]))).toBe('\udce2€');
    expect(decodeSurrogateEscape(Buffer.from([0xed, 0xa0, 0x80]))).toBe('\udced\udca0\udc80');
    expect(isUtf8(Buffer.from('prun-task-é'))).toBe(true);
    expect(isUtf8(Buffer.from([0xc0, 0x80]))).toBe(false);
  });

  it('agrees with the UTF-8 decoder on every valid string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        const bytes = Buffer.from(s, 'utf8');
        expect(isUtf8(bytes)).toBe(true);
        expect(decodeSurrogateEscape(bytes)).toBe(bytes.toString('utf8'));
      }),
    );
  });

  it('orders by code point like Python, not by UTF-16 unit', () => {
    expect(compareCodePoints('\uffff', '😀')).toBeLessThan(0);
    expect('\uffff' < '😀').toBe(false);
    expect(compareCodePoints('prun-task-Upper', 'prun-task-a')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'abc')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'ab')).toBe(0);
  });

  it('property: the fast comparison agrees with comparing code point by code point', () => {
    const reference = (a: string, b: string): number => {
      const x = Array.from(a, (c) => c.codePointAt(0)!);
      const y = Array.from(b, (c) => c.codePointAt(0)!);
      for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
      return Math.sign(x.length - y.length);
    };
    // Lone surrogates (the escapes of undecodable bytes), astral pairs and BMP characters
    // above the surrogates are where UTF-16 order and code point order part.
    const unit = fc.constantFrom('a', 'b', '\ud800', '\udcff', '\ude00', '\ud83d', '\ue000', '\uffff', '😀', '😁', '\u{10ffff}');
    const text = fc.array(unit, { maxLength: 6 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareCodePoints(a, b))).toBe(reference(a, b));
        expect(Math.sign(compareCodePoints(`prefix-${a}`, `prefix-${b}`))).toBe(reference(a, b));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('options', () => {
  it('parses every option, repeated roots in order, = forms, last value wins', () => {
    const parsed = parseArgs([
      '--root', 'a', '--root=b', '--json', '--summary', '--sort', 'path', '--sort=tail-bytes-desc',
      '--min-tail-bytes', '10', '--include-legacy-pid', '--root', '', '--batch', 'fan',
    ]);
    expect(parsed).toEqual({
      kind: 'run',
      options: { roots: ['a', 'b', ''], batch: 'fan', json: true, summary: true, sort: 'tail-bytes-desc', minTailBytes: 10, includeLegacyPid: true },
    });
    expect(parseArgs([])).toEqual({
      kind: 'run',
      options: { roots: [], batch: null, json: false, summary: false, sort: 'path', minTailBytes: 0, includeLegacyPid: false },
    });
    // As argparse's int: a sign is accepted, and a negative minimum hides nothing.
    expect(parseArgs(['--min-tail-bytes', '-5'])).toMatchObject({ kind: 'run', options: { minTailBytes: -5 } });
    expect(parseArgs(['--min-tail-bytes=+7'])).toMatchObject({ kind: 'run', options: { minTailBytes: 7 } });
    expect(parseArgs(['--json', '-h']).kind).toBe('help');
    expect(parseArgs(['--version']).kind).toBe('version');
  });

  it.each([
    [['--bogus'], 'unknown option: --bogus (see prun-report-state --help)'],
    [['--json=1'], '--json takes no value'],
    [['stray'], "unexpected argument 'stray'"],
    [['--sort', 'bad'], "--sort must be path or tail-bytes-desc, not 'bad'"],
    [['--min-tail-bytes', '1.5'], "--min-tail-bytes must be an integer, not '1.5'"],
    [['--min-tail-bytes', 'abc'], "--min-tail-bytes must be an integer, not 'abc'"],
    [['--min-tail-bytes', '--5'], "--min-tail-bytes must be an integer, not '--5'"],
    [['--min-tail-bytes', '99999999999999999999'], '--min-tail-bytes is too large'],
    [['--root'], '--root needs a value'],
  ])('rejects %j', (argv, message) => {
    const parsed = parseArgs(argv);
    expect(parsed.kind).toBe('usage-error');
    if (parsed.kind === 'usage-error') expect(parsed.message).toContain(message);
  });
});

describe('JSON rendering', () => {
  it('writes exactly what pyJsonDumps (json.dumps indent=2, ensure_ascii) writes for the same document', () => {
    const odd = ['plain', 'caf\u00e9', 'tab\tnl\nquote"back\\', 'del\u007f', 'ls\u2028ps\u2029', 'lone\udc80', 'pair\ud83d\ude00', 'ctl\u0001\u001f'];
    const records = odd.map((name, i) =>
      buildRecord({
        unit: `/r/prun-task-${name}`,
        outcome: { pathState: 'resolved', result: i % 2 ? 'present' : 'missing', target: `/out/${name}.md`, error: i === 3 ? { stage: 'result-target', error: 'PermissionError' } : null },
        tail: { bytes: i === 2 ? null : i * 1000, error: null },
      }),
    );
    for (const withSummary of [false, true]) {
      const report = buildReport({ roots: ['/r', '/r\u00e9'], discoveryErrors: [{ stage: 'root', root: '/r\u00e9', error: 'FileNotFoundError' }], records, display: { minTailBytes: 0, sort: 'path' }, withSummary, includeLegacyPid: false });
      expect(renderJson(report)).toBe(`${pyJsonDumps(jsonDocument(report), { indent: 2 })}\n`);
    }
    const empty = buildReport({ roots: [], discoveryErrors: [], records: [], display: { minTailBytes: 0, sort: 'path' }, withSummary: true, includeLegacyPid: false });
    expect(renderJson(empty)).toContain('"units": [],');
    expect(renderJson(empty)).toContain('"by_result": {},');
  });
});
