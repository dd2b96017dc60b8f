import { describe, expect, it } from 'vitest';
import {
  allowResolution,
  compareVersions,
  DEFAULT_EFFORT,
  DEFAULT_MODEL,
  effortFor,
  fallbackModelFor,
  modelPool,
  needsEffortFlag,
  newestInFamily,
  parseListing,
  parseTemplate,
  pyRepr,
  quotaNoteLineFor,
  resolveAgainstListing,
  SECOND_MODEL,
  TIER_WORDS,
  unavailableReason,
} from '../src/index.js';
import { NEWEST_IN_FAMILY_TABLE } from './table.js';

describe('constants', () => {
  it('match the dispatcher defaults', () => {
    expect(DEFAULT_MODEL).toBe('gemini-3.8-flash-high');
    expect(SECOND_MODEL).toBe('claude-sonnet-5-5-high');
    expect(DEFAULT_EFFORT).toBe('high');
    expect(TIER_WORDS).toEqual(['low', 'medium', 'high', 'xhigh', 'max', 'thinking']);
  });
});

describe('newestInFamily (the upstream table)', () => {
  it.each(NEWEST_IN_FAMILY_TABLE)('%s over %j -> %s', (template, listing, expected) => {
    expect(newestInFamily(template, listing)).toBe(expected);
  });

  it('compares versions beyond float precision', () => {
    const big = 'gemini-3.90071992547409930-flash-high';
    const bigger = 'gemini-3.90071992547409931-flash-high';
    expect(newestInFamily(big, [bigger, big])).toBe(bigger);
  });

  it('parses templates into prefix, version, suffix words and tier', () => {
    expect(parseTemplate('gemini-3.8-flash-high')).toEqual({
      prefix: 'gemini-',
      version: '3.8',
      suffix: '-flash-high',
      tier: 'high',
      nameWords: ['flash'],
    });
    expect(parseTemplate('claude-sonnet-5-5-high')).toMatchObject({ prefix: 'claude-sonnet-', version: '5-5', suffix: '-high' });
    expect(parseTemplate('claude-sonnet-4-6')).toMatchObject({ prefix: 'claude-sonnet-', version: '4-6', suffix: '', tier: null });
    expect(parseTemplate('claude-opus-4-6-thinking')).toMatchObject({ version: '4-6', tier: 'thinking', nameWords: [] });
    expect(parseTemplate('gpt-oss-120b-medium')).toBeNull();
    expect(parseTemplate('Gemini-3.8-flash-high')).toBeNull();
  });

  it('orders version tuples like Python', () => {
    expect(compareVersions(['3', '10'], ['3', '9'])).toBeGreaterThan(0);
    expect(compareVersions(['4'], ['3', '8'])).toBeGreaterThan(0);
    expect(compareVersions(['3', '8', '0'], ['3', '8'])).toBeGreaterThan(0);
    expect(compareVersions(['3', '08'], ['3', '8'])).toBe(0);
  });

  it('a name that does not end in a tier word is not in the family', () => {
    expect(newestInFamily('claude-sonnet-4-6', ['claude-sonnet-9-0-renamed', 'claude-sonnet-5-5'])).toBe('claude-sonnet-5-5');
  });

  it('stays fast on a long hostile template', () => {
    const started = Date.now();
    newestInFamily('a-'.repeat(5000) + '1.'.repeat(5000) + '-' + 'x'.repeat(5000) + '!', ['a-1']);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('parseListing (first word of each line)', () => {
  it('takes the first token of each non-blank line, in order', () => {
    const text = 'gemini-3.8-flash-high   Gemini 3.8 Flash (default)\n\n   \r\n  claude-sonnet-5-5-high\tClaude\r\ngpt-oss-120b-medium';
    expect(parseListing(text)).toEqual(['gemini-3.8-flash-high', 'claude-sonnet-5-5-high', 'gpt-oss-120b-medium']);
  });

  it('splits tokens on Python whitespace', () => {
    expect(parseListing('a\x1fb\nc\u3000d\n\x85\n')).toEqual(['a', 'c']);
    expect(parseListing('')).toEqual([]);
    // Form feed and U+2028 end a line for Python's splitlines(), so each starts a new slug.
    expect(parseListing('a b\x0cc d\u2028e\x1ff')).toEqual(['a', 'c', 'e']);
  });
});

describe('modelPool and effort', () => {
  it.each([
    ['gemini-3.8-flash-high', 'gemini'],
    ['claude-opus-4-6-thinking', 'second'],
    ['gpt-oss-120b-medium', 'second'],
    ['some-future-model', null],
    ['  GEMINI-x ', 'gemini'],
    ['Claude-x', 'second'],
    ['gemini', null],
  ])('modelPool(%j) = %j', (slug, pool) => {
    expect(modelPool(slug)).toBe(pool);
  });

  it('needsEffortFlag is false only for the second pool', () => {
    expect(needsEffortFlag('gemini-3.8-flash-high')).toBe(true);
    expect(needsEffortFlag('some-future-model')).toBe(true);
    expect(needsEffortFlag('claude-sonnet-5-5-high')).toBe(false);
    expect(needsEffortFlag('gpt-oss-120b-medium')).toBe(false);
  });

  it.each([
    ['gemini-3.1-pro-low', {}, 'low'],
    ['gemini-3.8-flash-medium', {}, 'medium'],
    ['gemini-3.8-flash-max', {}, 'max'],
    ['gemini-3.8-flash-xhigh', {}, 'high'],
    ['claude-opus-4-6-thinking', {}, 'high'],
    ['unknown', {}, 'high'],
    ['gemini-3.8-flash-medium', { ANTIGRAVITY_DISPATCH_EFFORT: '  high ' }, 'high'],
    ['gemini-3.8-flash-high', { ANTIGRAVITY_DISPATCH_EFFORT: 'custom' }, 'custom'],
    ['gemini-3.8-flash-low', { ANTIGRAVITY_DISPATCH_EFFORT: undefined }, 'low'],
  ])('effortFor(%j, %j) = %j', (slug, env, effort) => {
    expect(effortFor(slug, env)).toBe(effort);
  });
});

describe('the preflight decision', () => {
  it('allowResolution', () => {
    expect(allowResolution(DEFAULT_MODEL, undefined)).toBe(true);
    expect(allowResolution(SECOND_MODEL, '')).toBe(true);
    expect(allowResolution(DEFAULT_MODEL, 'claude-opus-4-6-thinking')).toBe(true);
    expect(allowResolution(DEFAULT_MODEL, ' gemini-3.8-flash-high ')).toBe(false);
    expect(allowResolution(SECOND_MODEL, SECOND_MODEL)).toBe(false);
    expect(allowResolution('gemini-3.1-pro-high', 'gemini-3.1-pro-high')).toBe(false);
    expect(allowResolution('gemini-3.1-pro-high', undefined)).toBe(false);
  });

  it('fallbackModelFor', () => {
    expect(fallbackModelFor(SECOND_MODEL)).toBe(DEFAULT_MODEL);
    expect(fallbackModelFor(DEFAULT_MODEL)).toBeNull();
    expect(fallbackModelFor('claude-opus-4-6-thinking')).toBeNull();
  });

  it('resolves to the newest in family with a MODEL-RESOLVE event', () => {
    const outcome = resolveAgainstListing({
      model: DEFAULT_MODEL,
      listing: ['gemini-3.8-flash-high', 'gemini-3.9-flash-high'],
      allowResolution: true,
      fallbackModel: null,
    });
    expect(outcome).toMatchObject({ model: 'gemini-3.9-flash-high', unavailable: false, reason: null });
    expect(outcome.events.map((event) => event.line)).toEqual([
      'MODEL-RESOLVE from=gemini-3.8-flash-high to=gemini-3.9-flash-high reason=newest-in-family',
    ]);
  });

  it('runs verbatim when resolution is not allowed', () => {
    const outcome = resolveAgainstListing({
      model: DEFAULT_MODEL,
      listing: ['gemini-3.8-flash-high', 'gemini-3.9-flash-high'],
      allowResolution: false,
      fallbackModel: null,
    });
    expect(outcome).toEqual({ model: DEFAULT_MODEL, events: [], unavailable: false, reason: null });
  });

  it('falls back from an unlisted second template to the Gemini family', () => {
    const outcome = resolveAgainstListing({
      model: SECOND_MODEL,
      listing: ['gemini-3.8-flash-medium', 'gemini-3.9-flash-high', 'gpt-oss-120b-medium'],
      allowResolution: true,
      fallbackModel: DEFAULT_MODEL,
    });
    expect(outcome.model).toBe('gemini-3.9-flash-high');
    expect(outcome.unavailable).toBe(false);
    expect(outcome.events).toEqual([
      {
        kind: 'MODEL-FALLBACK',
        from: SECOND_MODEL,
        to: 'gemini-3.9-flash-high',
        reason: 'template-unlisted',
        line: 'MODEL-FALLBACK from=claude-sonnet-5-5-high to=gemini-3.9-flash-high reason=template-unlisted',
      },
    ]);
  });

  it('resolves first, then falls back, in that order', () => {
    // A resolution that lands on a listed slug leaves nothing to fall back from.
    const listed = resolveAgainstListing({
      model: SECOND_MODEL,
      listing: ['claude-sonnet-5-6-high', DEFAULT_MODEL],
      allowResolution: true,
      fallbackModel: DEFAULT_MODEL,
    });
    expect(listed.events.map((event) => event.kind)).toEqual(['MODEL-RESOLVE']);
    expect(listed.model).toBe('claude-sonnet-5-6-high');
  });

  it('does not fall back when the fallback family is unlisted too', () => {
    const outcome = resolveAgainstListing({
      model: SECOND_MODEL,
      listing: ['gpt-oss-120b-medium'],
      allowResolution: true,
      fallbackModel: DEFAULT_MODEL,
    });
    expect(outcome).toEqual({
      model: SECOND_MODEL,
      events: [],
      unavailable: true,
      reason: "model 'claude-sonnet-5-5-high' is unavailable to this Antigravity account",
    });
  });

  it('a fallback model is ignored when resolution is not allowed', () => {
    const outcome = resolveAgainstListing({
      model: SECOND_MODEL,
      listing: [DEFAULT_MODEL],
      allowResolution: false,
      fallbackModel: DEFAULT_MODEL,
    });
    expect(outcome.unavailable).toBe(true);
    expect(outcome.events).toEqual([]);
  });

  it('listing membership is exact and case-sensitive', () => {
    const outcome = resolveAgainstListing({ model: 'Gemini-x', listing: ['gemini-x'], allowResolution: false });
    expect(outcome.unavailable).toBe(true);
  });

  it('quotaNoteLineFor', () => {
    expect(quotaNoteLineFor(DEFAULT_MODEL, DEFAULT_MODEL)).toBeNull();
    expect(quotaNoteLineFor(DEFAULT_MODEL, 'gemini-3.9-flash-high')).toBe(
      'MODEL-RESOLVE from=gemini-3.8-flash-high to=gemini-3.9-flash-high reason=newest-in-family',
    );
    expect(quotaNoteLineFor(SECOND_MODEL, 'gemini-3.9-flash-high')).toBe(
      'MODEL-FALLBACK from=claude-sonnet-5-5-high to=gemini-3.9-flash-high reason=template-unlisted',
    );
  });
});

describe('Python repr quoting', () => {
  it.each([
    ['gemini-x', "'gemini-x'"],
    ["it's", '"it\'s"'],
    ['say "hi"', '\'say "hi"\''],
    ['both \' and "', "'both \\' and \"'"],
    ['back\\slash', "'back\\\\slash'"],
    ['tab\tnew\nline\r', "'tab\\tnew\\nline\\r'"],
    ['\x00\x7f\x85\u200b\u{e0001}', "'\\x00\\x7f\\x85\\u200b\\U000e0001'"],
    ['é ü ✓ \u{1F600}', "'é ü ✓ \u{1F600}'"],
    ['nb\u00a0sp', "'nb\\xa0sp'"],
  ])('pyRepr(%j) = %s', (text, repr) => {
    expect(pyRepr(text)).toBe(repr);
  });

  it('unavailableReason uses it', () => {
    expect(unavailableReason("o'model")).toBe('model "o\'model" is unavailable to this Antigravity account');
  });
});
