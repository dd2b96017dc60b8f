import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, SECOND_MODEL } from '@prun/model-resolve';
import { readPoolStates, recheckAfterFallback, route, gateEnabled, routeNeedsSnapshot, type PoolStates } from '../src/index.js';
import { quotaByIds, snapshot } from './helpers.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');
const ON = {};
const SUGGESTION =
  ' Wait for that reset, or name a model in the Claude and GPT group through ANTIGRAVITY_DISPATCH_MODEL if that escalation is wanted.';

function states(pools: Parameters<typeof snapshot>[0]): PoolStates {
  const read = readPoolStates(snapshot(pools), NOW);
  if (read === null) throw new Error('fixture unreadable');
  return read;
}

function unpinned(pools: Parameters<typeof snapshot>[0]) {
  return route(DEFAULT_MODEL, false, states(pools), ON);
}

describe('unpinned unit (ANTIGRAVITY_DISPATCH_MODEL unset)', () => {
  it('gate off or unreadable snapshot runs the Gemini default unchanged', () => {
    expect(route(DEFAULT_MODEL, false, states({ gemini: 0, second: 0 }), { PRUN_AGY_QUOTA_GATE: 'off' })).toEqual({ model: DEFAULT_MODEL });
    expect(route(DEFAULT_MODEL, false, null, ON)).toEqual({ model: DEFAULT_MODEL });
  });

  it('an unreported Gemini group is unknown: run the default whatever the other group says', () => {
    expect(unpinned({ second: 1 })).toEqual({ model: DEFAULT_MODEL });
    expect(unpinned({ second: 0 })).toEqual({ model: DEFAULT_MODEL });
  });

  it('Gemini with room and no second group runs the default (balancing needs both groups)', () => {
    expect(unpinned({ gemini: 0.2 })).toEqual({ model: DEFAULT_MODEL });
  });

  it('empty Gemini and no second group blocks without the suggestion', () => {
    expect(unpinned({ gemini: 0 })).toEqual({ model: DEFAULT_MODEL, block: 'the Agy Gemini quota group is exhausted (resets r).' });
  });

  it('empty Gemini moves to the second template on any room, windows not required', () => {
    expect(unpinned({ gemini: 0, second: 0.1 })).toEqual({
      model: SECOND_MODEL,
      note: `MODEL-BALANCE from=${DEFAULT_MODEL} to=${SECOND_MODEL} reason=freer-meter own=0% other=10%`,
    });
    expect(unpinned({ gemini: { '5h': 0, weekly: 0.8 }, second: { weekly: 1 } }).model).toBe(SECOND_MODEL);
  });

  it('both groups empty blocks with both resets', () => {
    expect(unpinned({ gemini: 0, second: 0 })).toEqual({
      model: DEFAULT_MODEL,
      block: 'both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).',
    });
  });

  it('a 15-point lead with both windows moves to the second template', () => {
    expect(unpinned({ gemini: 0.2, second: 1 })).toEqual({
      model: SECOND_MODEL,
      note: `MODEL-BALANCE from=${DEFAULT_MODEL} to=${SECOND_MODEL} reason=freer-meter own=20% other=100%`,
    });
  });

  it('a lead under 15 points stays on Gemini', () => {
    expect(unpinned({ gemini: 0.5, second: 0.64 })).toEqual({ model: DEFAULT_MODEL });
  });

  it('a lead of 15 points needs both windows of the destination', () => {
    expect(unpinned({ gemini: { '5h': 0.4, weekly: 0.8 }, second: { weekly: 1 } })).toEqual({ model: DEFAULT_MODEL });
    expect(unpinned({ gemini: { '5h': 0.4, weekly: 0.8 }, second: { '5h': 1, weekly: 1 } }).model).toBe(SECOND_MODEL);
  });

  it('Gemini with room and the second group empty stays on Gemini', () => {
    expect(unpinned({ gemini: 0.3, second: 0 })).toEqual({ model: DEFAULT_MODEL });
  });

  it.each([
    [0.2, 0.34, 'gemini'],
    [0.2, 0.35, 'second'],
    [0.2, 0.36, 'second'],
    [0.5, 0.65, 'second'],
    [0.2, 1.0, 'second'],
    [0.0, 0.1, 'second'],
    [0.86, 0.6, 'gemini'],
    [1.0, 1.0, 'gemini'],
  ] as const)('literal check (%s, %s) → %s, never blocked', (g, s, group) => {
    const decision = route(DEFAULT_MODEL, false, readPoolStates(quotaByIds(g, s), NOW), ON);
    expect(decision.model).toBe(group === 'gemini' ? DEFAULT_MODEL : SECOND_MODEL);
    expect(decision.block).toBeUndefined();
    expect(decision.note === undefined).toBe(group === 'gemini');
  });

  it('literal check (0.0, 0.0) blocks', () => {
    expect(route(DEFAULT_MODEL, false, readPoolStates(quotaByIds(0, 0), NOW), ON).block).toContain('both Agy quota groups are exhausted');
  });

  it('a balanced decision is the same call pinned: no move at all', () => {
    expect(route(DEFAULT_MODEL, true, states({ gemini: 0.2, second: 1 }), ON)).toEqual({ model: DEFAULT_MODEL });
  });

  it('a model other than the default is never balanced even when unpinned', () => {
    expect(route('gemini-3.9-flash-high', false, states({ gemini: 0.2, second: 1 }), ON)).toEqual({ model: 'gemini-3.9-flash-high' });
  });
});

describe('named (pinned) model', () => {
  it('a model in no known pool runs unchanged', () => {
    expect(route('some-future-model', true, states({ gemini: 0, second: 0 }), ON)).toEqual({ model: 'some-future-model' });
  });

  it('gemini unknown or with room runs as named', () => {
    expect(route('gemini-3.1-pro-low', true, states({ second: 0 }), ON)).toEqual({ model: 'gemini-3.1-pro-low' });
    expect(route('gemini-3.1-pro-low', true, states({ gemini: 0.01, second: 0 }), ON)).toEqual({ model: 'gemini-3.1-pro-low' });
  });

  it('gemini empty, other unknown: blocks without the suggestion', () => {
    expect(route(DEFAULT_MODEL, true, states({ gemini: 0 }), ON)).toEqual({
      model: DEFAULT_MODEL,
      block: 'the Agy Gemini quota group is exhausted (resets r).',
    });
  });

  it('gemini empty, other with room: blocks with the ANTIGRAVITY_DISPATCH_MODEL suggestion, never escalates', () => {
    expect(route(DEFAULT_MODEL, true, states({ gemini: 0, second: 1 }), ON)).toEqual({
      model: DEFAULT_MODEL,
      block: `the Agy Gemini quota group is exhausted (resets r).${SUGGESTION}`,
    });
  });

  it('gemini empty, other empty: both exhausted', () => {
    expect(route('gemini-3.1-pro-high', true, states({ gemini: 0, second: 0 }), ON).block).toBe(
      'both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).',
    );
  });

  it('second unknown or with room runs as named', () => {
    expect(route('claude-opus-4-6-thinking', true, states({ gemini: 0 }), ON)).toEqual({ model: 'claude-opus-4-6-thinking' });
    expect(route('gpt-oss-120b-medium', true, states({ gemini: 0.86, second: 0.6 }), ON)).toEqual({ model: 'gpt-oss-120b-medium' });
  });

  it('second empty, Gemini with room: MODEL-FALLBACK to the Gemini default', () => {
    expect(route('claude-opus-4-6-thinking', true, states({ gemini: 0.86, second: 0 }), ON)).toEqual({
      model: DEFAULT_MODEL,
      note: `MODEL-FALLBACK from=claude-opus-4-6-thinking to=${DEFAULT_MODEL} reason=claude-and-gpt-quota-exhausted resets=r`,
    });
  });

  it('second empty, Gemini unreported: falls back too (unknown is not empty)', () => {
    const onlySecond = readPoolStates({ usage: { groups: [{ name: 'Claude and GPT models', buckets: [{ remaining_fraction: 0 }] }] } }, NOW);
    expect(route('claude-opus-4-6-thinking', true, onlySecond, ON)).toEqual({
      model: DEFAULT_MODEL,
      note: `MODEL-FALLBACK from=claude-opus-4-6-thinking to=${DEFAULT_MODEL} reason=claude-and-gpt-quota-exhausted resets=later`,
    });
  });

  it('second empty, Gemini empty: both exhausted, model unchanged', () => {
    expect(route('claude-opus-4-6-thinking', true, states({ gemini: 0, second: 0 }), ON)).toEqual({
      model: 'claude-opus-4-6-thinking',
      block: 'both Agy quota groups are exhausted (Gemini resets r, Claude and GPT resets r).',
    });
  });

  it('an empty reset reads "later" in every text', () => {
    const noResets = readPoolStates(quotaByIds(0, 0), NOW);
    expect(route(DEFAULT_MODEL, true, noResets, ON).block).toBe(
      'both Agy quota groups are exhausted (Gemini resets later, Claude and GPT resets later).',
    );
  });
});

describe('worked examples of routing (quota side)', () => {
  it('g=0.0, s=1.0 unpinned balances, and the re-check after a template-unlisted fallback blocks', () => {
    const read = readPoolStates(quotaByIds(0, 1), NOW);
    expect(route(DEFAULT_MODEL, false, read, ON)).toEqual({
      model: SECOND_MODEL,
      note: 'MODEL-BALANCE from=gemini-3.8-flash-high to=claude-sonnet-5-5-high reason=freer-meter own=0% other=100%',
    });
    expect(recheckAfterFallback('gemini-3.8-flash-high', read, ON)).toBe(
      `after MODEL-FALLBACK to gemini-3.8-flash-high: the Agy Gemini quota group is exhausted (resets later).${SUGGESTION}`,
    );
  });

  it('g=0.2, s=1.0 balances, and the re-check on gemini-3.9-flash-high passes', () => {
    const read = readPoolStates(quotaByIds(0.2, 1), NOW);
    expect(route(DEFAULT_MODEL, false, read, ON).model).toBe(SECOND_MODEL);
    expect(recheckAfterFallback('gemini-3.9-flash-high', read, ON)).toBeNull();
  });

  it('named claude-opus-4-6-thinking with g=0.86, s=0.0 falls back to the Gemini default', () => {
    const decision = route('claude-opus-4-6-thinking', true, readPoolStates(quotaByIds(0.86, 0), NOW), ON);
    expect(decision.model).toBe('gemini-3.8-flash-high');
    expect(decision.note?.startsWith('MODEL-FALLBACK from=claude-opus-4-6-thinking')).toBe(true);
  });

  it('the re-check with both groups empty names both, and is silent when the gate is off', () => {
    const read = readPoolStates(quotaByIds(0, 0), NOW);
    expect(recheckAfterFallback('gemini-3.9-flash-high', read, ON)).toBe(
      'after MODEL-FALLBACK to gemini-3.9-flash-high: both Agy quota groups are exhausted (Gemini resets later, Claude and GPT resets later).',
    );
    expect(recheckAfterFallback('gemini-3.9-flash-high', read, { PRUN_AGY_QUOTA_GATE: 'no' })).toBeNull();
  });
});

describe('PRUN_AGY_QUOTA_GATE', () => {
  it.each(['0', 'off', 'false', 'disabled', 'no', ' OFF ', 'Disabled', '\tno\n'])('%j switches the gate off', (value) => {
    const env = { PRUN_AGY_QUOTA_GATE: value };
    expect(gateEnabled(env)).toBe(false);
    expect(route(DEFAULT_MODEL, true, states({ gemini: 0 }), env)).toEqual({ model: DEFAULT_MODEL });
    expect(routeNeedsSnapshot(DEFAULT_MODEL, env)).toBe(false);
  });

  it.each([undefined, '', '1', 'on', 'true', 'yes', 'nope', 'offf'])('%j leaves the gate on', (value) => {
    const env = value === undefined ? {} : { PRUN_AGY_QUOTA_GATE: value };
    expect(gateEnabled(env)).toBe(true);
    expect(route(DEFAULT_MODEL, true, states({ gemini: 0 }), env).block).toBeDefined();
  });

  it('a model in no known pool needs no snapshot', () => {
    expect(routeNeedsSnapshot('some-future-model', {})).toBe(false);
    expect(routeNeedsSnapshot('GPT-oss-120b-medium', {})).toBe(true);
  });
});

describe('routing invariants (property)', () => {
  const fraction = fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: -0.5, max: 1.5, noNaN: true }));
  const state = fc.option(
    fc.record({ remaining: fraction, reset: fc.constantFrom('', 'r'), windows: fc.subarray(['5h', 'weekly'] as const) }),
    { nil: undefined },
  );
  const model = fc.constantFrom(DEFAULT_MODEL, SECOND_MODEL, 'gemini-3.1-pro-low', 'claude-opus-4-6-thinking', 'gpt-oss-120b-medium', 'llama-4');

  it('blocks only into a pool read as empty, runs only known models or the default, never blocks an unknown pool', () => {
    fc.assert(
      fc.property(model, fc.boolean(), state, state, (name, pinned, gemini, second) => {
        const states: PoolStates = { ...(gemini ? { gemini } : {}), ...(second ? { second } : {}) };
        const decision = route(name, pinned, states, {});
        if (decision.block !== undefined) {
          expect(decision.note).toBeUndefined();
          const pool = name.startsWith('gemini-') ? gemini : name === 'llama-4' ? undefined : second;
          expect(pool !== undefined && pool.remaining <= 0).toBe(true);
        }
        if (decision.model !== name) expect([DEFAULT_MODEL, SECOND_MODEL]).toContain(decision.model);
        if (decision.model === SECOND_MODEL && name !== SECOND_MODEL) {
          expect(pinned).toBe(false);
          expect(decision.note?.startsWith('MODEL-BALANCE ')).toBe(true);
        }
        if (name === 'llama-4' || (gemini === undefined && second === undefined)) expect(decision).toEqual({ model: name });
        expect(route(name, pinned, states, { PRUN_AGY_QUOTA_GATE: 'disabled' })).toEqual({ model: name });
      }),
      { numRuns: 500 },
    );
  });
});

describe('balance never moves into an empty group', () => {
  it('an unpinned unit whose Gemini group reads below zero stays put when the other group is empty too', () => {
    const both = ['5h', 'weekly'] as const;
    const decision = route(DEFAULT_MODEL, false, { gemini: { remaining: -0.15, reset: '', windows: [...both] }, second: { remaining: 0, reset: '', windows: [...both] } }, {});
    expect(decision.model).toBe(DEFAULT_MODEL);
    expect(decision.note).toBeUndefined();
    expect(decision.block).toMatch(/^both Agy quota groups are exhausted/);
  });
});
