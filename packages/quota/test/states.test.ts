import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_MODEL } from '@prun/model-resolve';
import {
  formatPercent,
  parseIsoInstant,
  parseJsonLenient,
  pythonJsonDumps,
  snapshotText,
  readPoolStates,
  route,
  SnapshotSchema,
} from '../src/index.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');

function groups(...list: unknown[]): unknown {
  return { cached_at: 1, usage: { groups: list } };
}

describe('readPoolStates (pool states)', () => {
  it('a group is read at its emptiest bucket; windows empty without window field or id', () => {
    const read = readPoolStates(
      groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0.9, reset_time: 'w' }, { remaining_fraction: 0.1, reset_time: '5h' }] }),
      NOW,
    );
    expect(read).toEqual({ gemini: { remaining: 0.1, reset: '5h', windows: [] } });
  });

  it('ties keep the first bucket in encounter order', () => {
    const read = readPoolStates(
      groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0.3, reset_time: 'first' }, { remaining_fraction: 0.3, reset_time: 'second' }] }),
      NOW,
    );
    expect(read?.gemini?.reset).toBe('first');
  });

  it('groups match by substring of the lower-cased name; two groups of one pool pool their buckets', () => {
    const read = readPoolStates(
      groups(
        { name: 'GEMINI pro', buckets: [{ id: 'gemini-5h', remaining_fraction: 0.5 }] },
        { name: 'more gemini', buckets: [{ id: 'gemini-weekly', remaining_fraction: 0.7 }] },
        { name: 'Claude only', buckets: [{ id: '3p-5h', remaining_fraction: 0.4 }] },
        { name: 'some GPT', buckets: [{ id: '3p-weekly', remaining_fraction: 0.2, reset_time: '  2026-09-12T00:00:00Z ' }] },
        { name: 'Imagen models', buckets: [{ remaining_fraction: 0 }] },
        { buckets: [{ remaining_fraction: 0 }] },
      ),
      NOW,
    );
    expect(read).toEqual({
      gemini: { remaining: 0.5, reset: '', windows: ['5h', 'weekly'] },
      second: { remaining: 0.2, reset: '2026-09-12T00:00:00Z', windows: ['5h', 'weekly'] },
    });
  });

  it('windows come from the window field first, else from the id suffix, case-insensitively', () => {
    const read = readPoolStates(
      groups({
        name: 'Gemini Models',
        buckets: [
          { id: 'gemini-weekly', window: '5H', remaining_fraction: 0.5 },
          { id: 'x-daily', window: 'daily', remaining_fraction: 0.5 },
        ],
      }),
      NOW,
    );
    expect(read?.gemini?.windows).toEqual(['5h']);
    const fromId = readPoolStates(groups({ name: 'Gemini Models', buckets: [{ id: 'gemini-WEEKLY', window: 'month', remaining_fraction: 1 }] }), NOW);
    expect(fromId?.gemini?.windows).toEqual(['weekly']);
  });

  it('an empty bucket with a future reset stays empty and blocks; one with a past reset is dropped', () => {
    const future = readPoolStates(groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0, reset_time: '2026-09-11T14:00:00Z' }] }), NOW);
    expect(route(DEFAULT_MODEL, true, future, {}).block).toBe('the Agy Gemini quota group is exhausted (resets 2026-09-11T14:00:00Z).');
    const past = readPoolStates(groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0, reset_time: '2026-09-11T11:55:00z' }] }), NOW);
    expect(past).toBeNull();
    expect(route(DEFAULT_MODEL, true, past, {})).toEqual({ model: DEFAULT_MODEL });
  });

  it('expiry: offsets, zone-less UTC, and unparseable or empty resets', () => {
    const bucket = (reset: unknown) => readPoolStates(groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0, reset_time: reset }] }), NOW);
    expect(bucket('2026-09-11T13:30:00+02:00')).toBeNull(); // 11:30Z, passed
    expect(bucket('2026-09-11T11:30:00-02:00')).not.toBeNull(); // 13:30Z, ahead
    expect(bucket('2026-09-11T11:59:59')).toBeNull(); // no zone: UTC
    expect(bucket('2026-09-11 12:00:00')).toBeNull(); // == now counts as passed
    expect(bucket('yesterday')?.gemini?.reset).toBe('yesterday');
    expect(bucket(null)?.gemini?.reset).toBe('');
    expect(bucket('')?.gemini?.remaining).toBe(0);
  });

  it('a bucket with room is never dropped for a past reset; a negative one expires like zero', () => {
    expect(readPoolStates(groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: 0.1, reset_time: '2020-01-01T00:00:00Z' }] }), NOW)?.gemini?.remaining).toBe(0.1);
    expect(readPoolStates(groups({ name: 'Gemini Models', buckets: [{ remaining_fraction: -0.5, reset_time: '2020-01-01' }] }), NOW)).toBeNull();
  });

  it('non-numbers and non-finite fractions are skipped, integers allowed', () => {
    const read = readPoolStates(
      groups({
        name: 'Gemini Models',
        buckets: [
          { remaining_fraction: true },
          { remaining_fraction: false },
          { remaining_fraction: '0' },
          { remaining_fraction: null },
          { remaining_fraction: Number.NaN },
          { remaining_fraction: Number.NEGATIVE_INFINITY },
          { remaining_fraction: 1 },
        ],
      }),
      NOW,
    );
    expect(read).toEqual({ gemini: { remaining: 1, reset: '', windows: [] } });
  });

  it('a NaN fraction is not an empty group: no gate (also through Python-style JSON text)', () => {
    const text = '{"usage": {"groups": [{"name": "Gemini Models", "buckets": [{"remaining_fraction": NaN, "id": "gemini-5h"}]}]}}';
    const read = readPoolStates(parseJsonLenient(text), NOW);
    expect(read).toBeNull();
    expect(route(DEFAULT_MODEL, false, read, {})).toEqual({ model: DEFAULT_MODEL });
  });

  it('malformed snapshots are unreadable, never throw, never block', () => {
    const malformed: unknown[] = [
      null,
      42,
      'text',
      [],
      {},
      { usage: null },
      { usage: [] },
      { usage: { groups: {} } },
      { usage: { groups: 'x' } },
      { usage: { groups: [] } },
      { usage: { groups: [null, 1, 'g', [], { name: 'Gemini Models', buckets: 'nope' }, { name: 'Gemini Models', buckets: [null, 3, []] }] } },
      { usage: { groups: [{ name: 'Unknown', buckets: [{ remaining_fraction: 0 }] }] } },
    ];
    for (const data of malformed) {
      const read = readPoolStates(data, NOW);
      expect(read).toBeNull();
      expect(route(DEFAULT_MODEL, true, read, {})).toEqual({ model: DEFAULT_MODEL });
    }
  });

  it('never throws on arbitrary JSON (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const read = readPoolStates({ usage: { groups: [{ name: 'Gemini Models', buckets: [value] }, value] } }, NOW);
        expect(read === null || typeof read === 'object').toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('SnapshotSchema accepts what agent-quota writes and rejects a snapshot without usage.groups', () => {
    expect(SnapshotSchema.safeParse({ cached_at: 1.5, usage: { groups: [], other: 1 }, plan_tier: 'ULTRA' }).success).toBe(true);
    expect(SnapshotSchema.safeParse({ cached_at: 1.5, usage: {} }).success).toBe(false);
  });
});

describe('formatPercent (Python {:.0%})', () => {
  it.each([
    [0.2, '20%'],
    [1.0, '100%'],
    [0.0, '0%'],
    [0.125, '12%'],
    [0.375, '38%'],
    [0.625, '62%'],
    [0.145, '14%'], // 14.499999999999998 in binary
    [0.35, '35%'],
    [0.005, '0%'], // 0.5 exactly → even
    [0.015, '2%'], // 1.5 → even 2
    [0.025, '2%'], // 2.5 → even 2
    [-0.001, '-0%'],
    [1.5, '150%'],
  ])('%s → %s', (value, text) => {
    expect(formatPercent(value)).toBe(text);
  });
});

describe('parseIsoInstant', () => {
  it.each([
    ['2026-09-11T15:34:00Z', Date.UTC(2026, 8, 11, 15, 34)],
    ['2026-09-11T15:34:00.250+01:00', Date.UTC(2026, 8, 11, 14, 34, 0, 250)],
    ['2026-09-11', Date.UTC(2026, 8, 11)],
    ['20260911T153400', Date.UTC(2026, 8, 11, 15, 34)],
    ['2026-09-11T15:34', Date.UTC(2026, 8, 11, 15, 34)],
  ])('%s', (text, ms) => {
    expect(parseIsoInstant(text)).toBe(ms);
  });

  it.each(['', 'r', 'later', '2026-13-01', '2026-02-30T00:00:00Z', '2026-09-11T25:00:00', '2026-09-11T10:00:00+25:00'])('%j is not a timestamp', (text) => {
    expect(parseIsoInstant(text)).toBeNull();
  });
});

describe('Python JSON', () => {
  it('dumps with Python separators and ASCII escapes', () => {
    expect(pythonJsonDumps({ a: [1, 0.5, 'é'], b: null, c: true })).toBe('{"a": [1, 0.5, "\\u00e9"], "b": null, "c": true}');
  });

  it('writes U+007F as \\u007f, as Python does (it was written raw before)', () => {
    expect(pythonJsonDumps({ name: 'a\x7fb' })).toBe('{"name": "a\\u007fb"}');
    expect(snapshotText(1789140000, { groups: [{ name: 'G\x7f' }] }, 'pro\x7f')).toBe(
      '{"cached_at": 1789140000.0, "usage": {"groups": [{"name": "G\\u007f"}]}, "plan_tier": "pro\\u007f"}',
    );
  });

  it('lenient parse leaves NaN inside strings alone', () => {
    expect(parseJsonLenient('{"NaN": "Infinity", "x": -Infinity, "y": [NaN]}')).toEqual({ NaN: 'Infinity', x: null, y: [null] });
  });
});

describe("snapshot values read as text with Python's str()", () => {
  it('a non-string name, id or window is read as str() writes it, not as empty', async () => {
    const { groupPool, bucketWindow } = await import('../src/index.js');
    // str(['Gemini']) is "['Gemini']", which contains "gemini"; str(True) is "True".
    expect(groupPool(['Gemini'])).toBe('gemini');
    expect(groupPool({ 'Claude models': 1 })).toBe('second');
    expect(groupPool(true)).toBeNull();
    expect(bucketWindow({ id: ['x', 'weekly'] })).toBeNull();
    expect(bucketWindow({ window: 5, id: 'gemini-5h' })).toBe('5h');
    expect(bucketWindow({ id: 'gemini-5H' })).toBe('5h');
  });
});
