import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, SECOND_MODEL } from '@prun/model-resolve';
import {
  QUOTA_EXHAUSTED_EXIT,
  blockResetTimes,
  earliestBlockReset,
  isQuotaBlock,
  readPoolStates,
  recheckAfterFallback,
  route,
} from '../src/index.js';
import { snapshot } from './helpers.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');

function blockFor(model: string, pinned: boolean, pools: Parameters<typeof snapshot>[0]): string {
  const states = readPoolStates(snapshot(pools), NOW);
  const block = route(model, pinned, states, {}).block;
  if (block === undefined) throw new Error('fixture did not block');
  return block;
}

describe('reading a block back', () => {
  it('every block route writes is recognised, wrapped or not; other texts are not', () => {
    const blocks = [
      blockFor(DEFAULT_MODEL, true, { gemini: 0, second: 1 }),
      blockFor(DEFAULT_MODEL, false, { gemini: 0, second: 0 }),
      blockFor(SECOND_MODEL, true, { gemini: 0, second: 0 }),
      blockFor(DEFAULT_MODEL, true, { gemini: 0 }),
    ];
    for (const block of blocks) {
      expect(isQuotaBlock(block), block).toBe(true);
      expect(isQuotaBlock(`INCOMPLETE; after MODEL-FALLBACK to ${DEFAULT_MODEL}: ${block}`)).toBe(true);
    }
    expect(isQuotaBlock('Agy exited with code 3')).toBe(false);
    expect(isQuotaBlock('the quota snapshot is unreadable')).toBe(false);
    expect(QUOTA_EXHAUSTED_EXIT).toBe(75);
  });

  it('reset times come out of the texts route writes, unknown ones left out', () => {
    const states = readPoolStates(
      {
        usage: {
          groups: [{ name: 'Gemini Models', buckets: [{ window: '5h', remaining_fraction: 0, reset_time: '2026-09-11T15:34:00Z' }] }],
        },
      },
      NOW,
    );
    const block = route(DEFAULT_MODEL, true, states, {}).block ?? '';
    expect(blockResetTimes(block)).toEqual([Date.parse('2026-09-11T15:34:00Z')]);
    const both = 'both Agy quota groups are exhausted (Gemini resets 2026-09-11T18:00:00+02:00, Claude and GPT resets 2026-09-11T15:00:00Z).';
    expect(blockResetTimes(both)).toEqual([Date.parse('2026-09-11T16:00:00Z'), Date.parse('2026-09-11T15:00:00Z')]);
    expect(earliestBlockReset(both)).toBe(Date.parse('2026-09-11T15:00:00Z'));
    expect(earliestBlockReset('the Agy Gemini quota group is exhausted (resets later).')).toBeNull();
    expect(blockResetTimes('(resets 2026-09-11T15:00:00)')).toEqual([Date.parse('2026-09-11T15:00:00Z')]);
    expect(recheckAfterFallback(DEFAULT_MODEL, states, {})).toContain('resets 2026-09-11T15:34:00Z');
  });
});
