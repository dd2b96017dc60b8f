import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL, modelFallbackLine } from '@prun/model-resolve';
import { balanceNote, hasQuotaFallbackNote, parseQuotaFallbackNote, quotaFallbackNote, readPoolStates, route } from '../src/index.js';
import { snapshot } from './helpers.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');
const FROM = 'claude-opus-4-6-thinking';

/** The note `route` writes for a pinned Claude unit when its group is empty and Gemini has room. */
function routedNote(): string {
  const note = route(FROM, true, readPoolStates(snapshot({ gemini: 0.5, second: 0 }), NOW), {}).note;
  if (note === undefined) throw new Error('fixture did not fall back');
  return note;
}

describe('reading a quota MODEL-FALLBACK note back', () => {
  it('parses the note route writes, bare (quota-note) and with a bin prefix (stderr)', () => {
    const note = routedNote();
    const parsed = parseQuotaFallbackNote(note);
    expect(parsed).toMatchObject({ from: FROM, to: DEFAULT_MODEL });
    expect(parsed?.resets).not.toBe('');
    expect(parseQuotaFallbackNote(`dispatch-task-agy: ${note}`)).toEqual(parsed);
    expect(parseQuotaFallbackNote(`prun-quota: ${note}\n`)).toEqual(parsed);
  });

  it('keeps the reset as written, "later" when the snapshot gave none', () => {
    const state = { remaining: 0, reset: '', windows: [] };
    expect(parseQuotaFallbackNote(quotaFallbackNote(FROM, state))?.resets).toBe('later');
    expect(parseQuotaFallbackNote(quotaFallbackNote(FROM, { ...state, reset: '2026-09-11T17:00:00Z' }))?.resets).toBe(
      '2026-09-11T17:00:00Z',
    );
  });

  it('is not fooled by other MODEL-* lines or a note quoted inside other text', () => {
    const note = routedNote();
    expect(parseQuotaFallbackNote(modelFallbackLine(FROM, DEFAULT_MODEL))).toBeNull(); // template-unlisted
    expect(parseQuotaFallbackNote(balanceNote(DEFAULT_MODEL, FROM, { remaining: 0.1, reset: '', windows: [] }, { remaining: 0.9, reset: '', windows: [] }))).toBeNull();
    expect(parseQuotaFallbackNote(`FALLBACK: ${note}`)).toBeNull();
    expect(parseQuotaFallbackNote('')).toBeNull();
  });

  it('finds the note among a quota-note file or a captured stderr', () => {
    const note = routedNote();
    expect(hasQuotaFallbackNote(`${modelFallbackLine(FROM, DEFAULT_MODEL)}\n${note}\n`)).toBe(true);
    expect(hasQuotaFallbackNote(`STATE-DIR /tmp/x\r\ndispatch-task-agy: ${note}\r\n`)).toBe(true);
    expect(hasQuotaFallbackNote(`${modelFallbackLine(FROM, DEFAULT_MODEL)}\n`)).toBe(false);
    expect(hasQuotaFallbackNote('')).toBe(false);
  });
});
