import { z } from 'zod';
// Python's str(x) of the snapshot values read as text (name, id, window, reset_time), as the original does.
import { pyStr } from '@prun/kit/py';
import { toEpochMs } from './clock.js';
import { parseIsoInstant } from './iso-time.js';
import { pyStrip, type Pool } from './models.js';

import { REQUIRED_WINDOWS, type QuotaWindow } from './windows.js';

export { REQUIRED_WINDOWS, type QuotaWindow };

/**
 * One quota group as the snapshot reports it: `remaining` and `reset` of its emptiest bucket,
 * and the windows its surviving buckets covered (the minimum alone cannot tell a group that
 * reported one window from one that reported both).
 */
export interface PoolState {
  readonly remaining: number;
  readonly reset: string;
  readonly windows: readonly QuotaWindow[];
}

/** A pool missing here is unknown, which is never treated as empty. */
export type PoolStates = Readonly<Partial<Record<Pool, PoolState>>>;

/** One bucket as Agy's `/usage` reports it. Readers accept anything and skip what does not fit. */
export const SnapshotBucketSchema = z.looseObject({
  id: z.string().optional(),
  window: z.string().optional(),
  remaining_fraction: z.number(),
  reset_time: z.string().nullable().optional(),
});

export const SnapshotGroupSchema = z.looseObject({
  name: z.string(),
  buckets: z.array(SnapshotBucketSchema),
});

/** `command.data` of Agy's `/usage` answer, stored verbatim as the snapshot's `usage`. */
export const UsageDataSchema = z.looseObject({ groups: z.array(z.unknown()) });

/**
 * The snapshot file (`agy-quota-cache.json`) as far as a reader relies on it: an object whose
 * `usage.groups` is an array. Groups and buckets are read tolerantly by `readPoolStates`.
 */
export const SnapshotSchema = z.looseObject({
  cached_at: z.unknown().optional(),
  usage: UsageDataSchema,
  plan_tier: z.unknown().optional(),
});
export type Snapshot = z.infer<typeof SnapshotSchema>;

/** What `refresh()` writes. */
export const WrittenSnapshotSchema = z.object({
  cached_at: z.number(),
  usage: UsageDataSchema,
  plan_tier: z.unknown().optional(),
});

export interface BucketReading {
  readonly remaining: number;
  readonly reset: string;
  readonly window: QuotaWindow | null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Substring match on the lower-cased group name: "Gemini Models" → gemini, "Claude and GPT models" → second. */
export function groupPool(name: unknown): Pool | null {
  const lowered = pyStr(name).toLowerCase();
  if (lowered.includes('gemini')) return 'gemini';
  if (lowered.includes('claude') || lowered.includes('gpt')) return 'second';
  return null;
}

/** The bucket's `window` field, else the last `-` segment of its `id` (`gemini-5h` → `5h`). */
export function bucketWindow(bucket: Record<string, unknown>): QuotaWindow | null {
  const idText = pyStr(bucket['id'] ?? '');
  const idSuffix = idText.slice(idText.lastIndexOf('-') + 1);
  for (const candidate of [bucket['window'], idSuffix]) {
    const text = pyStrip(candidate ? pyStr(candidate) : '').toLowerCase();
    if ((REQUIRED_WINDOWS as readonly string[]).includes(text)) return text as QuotaWindow;
  }
  return null;
}

/** True while an empty bucket's own reset has not arrived; an absent or unparseable reset never arrives. */
export function stillEmpty(reset: string, nowMs: number): boolean {
  if (reset === '') return true;
  const instant = parseIsoInstant(reset);
  return instant === null || instant > nowMs;
}

/** The remaining fraction of a bucket, or null when it is not a finite JSON number. */
function bucketRemaining(bucket: Record<string, unknown>): number | null {
  const value = bucket['remaining_fraction'];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function bucketReset(bucket: Record<string, unknown>): string {
  const value = bucket['reset_time'];
  return pyStrip(value ? pyStr(value) : '');
}

/**
 * Every usable bucket of every recognised group, per pool, in encounter order. Buckets whose
 * fraction is not a finite number are skipped, and so is an empty bucket whose reset has passed.
 * Returns null when the data is not a snapshot (`usage.groups` not an array).
 */
export function readBuckets(
  data: unknown,
  nowMs: number,
): Partial<Record<Pool, BucketReading[]>> | null {
  const parsed = SnapshotSchema.safeParse(data);
  if (!parsed.success) return null;
  const readings: Partial<Record<Pool, BucketReading[]>> = {};
  for (const group of parsed.data.usage.groups) {
    if (!isRecord(group)) continue;
    const pool = groupPool(group['name'] ?? '');
    if (pool === null) continue;
    const buckets = Array.isArray(group['buckets']) ? (group['buckets'] as unknown[]) : [];
    for (const bucket of buckets) {
      if (!isRecord(bucket)) continue;
      const remaining = bucketRemaining(bucket);
      if (remaining === null) continue;
      const reset = bucketReset(bucket);
      if (remaining <= 0 && !stillEmpty(reset, nowMs)) continue;
      (readings[pool] ??= []).push({ remaining, reset, window: bucketWindow(bucket) });
    }
  }
  return readings;
}

/**
 * The pool states of a parsed snapshot (README: How it works, Pool states), or null for "unreadable: no gate". A pool's
 * state is its emptiest bucket (the first on ties) plus the windows of all its buckets.
 */
export function readPoolStates(data: unknown, now?: Date | number): PoolStates | null {
  const readings = readBuckets(data, toEpochMs(now));
  if (readings === null) return null;
  const states: Partial<Record<Pool, PoolState>> = {};
  for (const pool of ['gemini', 'second'] as const) {
    const entries = readings[pool];
    if (entries === undefined || entries.length === 0) continue;
    let emptiest = entries[0] as BucketReading;
    for (const entry of entries) if (entry.remaining < emptiest.remaining) emptiest = entry;
    const windows = REQUIRED_WINDOWS.filter((window) => entries.some((entry) => entry.window === window));
    states[pool] = { remaining: emptiest.remaining, reset: emptiest.reset, windows };
  }
  return Object.keys(states).length === 0 ? null : states;
}
