import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

// afterAll, not afterEach: concurrent tests in one file would remove each other's directories.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A temp dir removed when the test file finishes. */
export function tempDir(prefix = 'prun-quota-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

type WindowSpec = number | Partial<Record<'5h' | 'weekly', number>>;

/**
 * The upstream unit tests' `_snapshot(**pools)`: buckets `{remaining_fraction, reset_time: "r",
 * window}`. A number reports both windows; a dict only the windows it names. The reset "r" is
 * unparseable, so empty buckets never expire.
 */
export function snapshot(pools: { gemini?: WindowSpec; second?: WindowSpec }): unknown {
  const groups: unknown[] = [];
  const names = { gemini: 'Gemini Models', second: 'Claude and GPT models' } as const;
  for (const pool of ['gemini', 'second'] as const) {
    const spec = pools[pool];
    if (spec === undefined) continue;
    const windows = typeof spec === 'number' ? { '5h': spec, weekly: spec } : spec;
    groups.push({
      name: names[pool],
      buckets: Object.entries(windows).map(([window, remaining]) => ({ remaining_fraction: remaining, reset_time: 'r', window })),
    });
  }
  return { cached_at: 1789140000.123, usage: { groups } };
}

/** The integration tests' `_quota(gemini, second)`: ids carry the windows, no reset times. */
export function quotaByIds(gemini: number, second: number): unknown {
  return {
    cached_at: Date.now() / 1000,
    usage: {
      groups: [
        { name: 'Gemini Models', buckets: [{ id: 'gemini-5h', remaining_fraction: gemini }, { id: 'gemini-weekly', remaining_fraction: gemini }] },
        { name: 'Claude and GPT models', buckets: [{ id: '3p-5h', remaining_fraction: second }, { id: '3p-weekly', remaining_fraction: second }] },
      ],
    },
  };
}

export function writeJson(file: string, value: unknown): string {
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

/** An example `/usage` answer, as agy gives it. */
export const USAGE_PAYLOAD = {
  status: 'SUCCESS',
  num_turns: 0,
  usage: { total_tokens: 0 },
  command: {
    name: 'usage',
    data: {
      groups: [
        {
          name: 'Gemini Models',
          buckets: [
            { id: 'gemini-weekly', window: 'weekly', remaining_fraction: 0.4, reset_time: '2026-09-11T20:00:00Z' },
            { id: 'gemini-5h', window: '5h', remaining_fraction: 0.75, reset_time: '2026-09-11T20:00:00Z' },
          ],
        },
        {
          name: 'Claude and GPT models',
          buckets: [
            { id: '3p-weekly', window: 'weekly', remaining_fraction: 0.8 },
            { id: '3p-5h', window: '5h', remaining_fraction: 0.9 },
          ],
        },
      ],
    },
  },
};
