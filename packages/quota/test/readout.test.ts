import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ageText, buildReadout, cellText, formatReadout, loadPoolStatesForDispatch, resetText } from '../src/index.js';
import { quotaByIds, tempDir, writeJson } from './helpers.js';

const NOW = Date.parse('2026-09-11T12:00:00Z');

describe('readout cells', () => {
  it.each([
    [0, 'resetting'],
    [-5, 'resetting'],
    [59, 'resets <1m'],
    [60, 'resets 1m'],
    [3599, 'resets 59m'],
    [3600, 'resets 1h0m'],
    [86_399, 'resets 23h59m'],
    [86_400, 'resets 1d0h'],
    [3 * 86_400 + 4 * 3600 + 59, 'resets 3d4h'],
  ])('reset in %ss → %s', (seconds, text) => {
    expect(resetText(seconds)).toBe(text);
  });

  it.each([
    [null, '?'],
    [-10, 'just now'],
    [59.9, 'just now'],
    [60, '1m ago'],
    [3599, '59m ago'],
    [3600, '1h0m ago'],
    [86_399, '23h59m ago'],
    [86_400, '1d ago'],
  ])('age %s → %s', (seconds, text) => {
    expect(ageText(seconds)).toBe(text);
  });

  it('remaining is clamped to [0, 1] and rounded half-even; a missing window is a dash', () => {
    expect(cellText({ remaining: 0.125, reset: null, resets_in_seconds: null })).toBe('12% left');
    expect(cellText({ remaining: 1.7, reset: null, resets_in_seconds: null })).toBe('100% left');
    expect(cellText({ remaining: -0.3, reset: 'x', resets_in_seconds: null })).toBe('0% left');
    expect(cellText({ remaining: 0.5, reset: 'x', resets_in_seconds: 120 })).toBe('50% left (resets 2m)');
    expect(cellText(null)).toBe('—');
  });
});

describe('buildReadout', () => {
  it('picks the emptiest bucket per window and labels the plan tier', async () => {
    const home = tempDir();
    const file = writeJson(path.join(home, 's.json'), {
      cached_at: NOW / 1000 - 7200,
      plan_tier: 'PRO',
      usage: {
        groups: [
          { name: 'Gemini Models', buckets: [{ id: 'gemini-5h', remaining_fraction: 0.6 }, { window: '5h', remaining_fraction: 0.3, reset_time: '2026-09-11T12:30:00Z' }] },
        ],
      },
    });
    const readout = await buildReadout({ env: { HOME: home, AGY_QUOTA_CACHE: file }, now: NOW, installed: false });
    expect(formatReadout(readout)).toEqual(['Agy      Gemini/PRO    5h 30% left (resets 30m)  7d —                     [2h0m ago]']);
  });

  it('starts a background refresh only when the snapshot and the marker are both older than the TTL', async () => {
    const home = tempDir();
    const cache = path.join(home, '.claude', 'agy-quota-cache.json');
    let started = 0;
    const startRefresh = () => {
      started += 1;
      return true;
    };
    const env = { HOME: home };
    expect((await buildReadout({ env, now: NOW, installed: true, startRefresh })).status).toBe('refresh-started');
    expect((await buildReadout({ env, now: NOW, installed: false, startRefresh })).status).toBe('not-installed');
    mkdirSync(path.dirname(cache), { recursive: true });
    writeFileSync(`${cache}.last-attempt`, '{}');
    utimesSync(`${cache}.last-attempt`, NOW / 1000 - 10, NOW / 1000 - 10);
    expect((await buildReadout({ env, now: NOW, installed: true, startRefresh })).status).toBe('unavailable');
    expect(started).toBe(1);
  });

  it('never throws on arbitrary snapshot content (property)', async () => {
    const home = tempDir();
    const file = path.join(home, 'arbitrary.json');
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.jsonValue(), async (usage, bucket) => {
        writeFileSync(file, JSON.stringify({ cached_at: NOW / 1000, usage: { groups: [{ name: 'Gemini Models', buckets: [bucket] }, usage] } }));
        const readout = await buildReadout({ env: { HOME: home, AGY_QUOTA_CACHE: file }, now: NOW, installed: true });
        expect(formatReadout(readout).length).toBeGreaterThan(0);
      }),
      { numRuns: 100 },
    );
  });
});

describe('upstream #17: a snapshot that cannot be refreshed reads as unknown', () => {
  it('managed snapshot 1500 s old, no agy binary → no gate (real refresh, not a stub)', async () => {
    const home = tempDir();
    const cache = path.join(home, '.claude', 'agy-quota-cache.json');
    mkdirSync(path.dirname(cache), { recursive: true });
    writeJson(cache, quotaByIds(0, 0));
    const old = Date.now() / 1000 - 1500;
    utimesSync(cache, old, old);
    const env = { HOME: home, PATH: '', ANTIGRAVITY_BIN: path.join(home, 'missing-agy') };
    expect(await loadPoolStatesForDispatch({ env })).toBeNull();
  });
});
