import { clockMs, type Clock } from './clock.js';
import { fileAgeSeconds, readJsonFile } from './files.js';
import { parseIsoInstant } from './iso-time.js';
import { attemptMarkerPath, snapshotLocation, type Env } from './location.js';
import type { Pool } from './models.js';
import { formatFixed0 } from './percent.js';
import { refreshSettings } from './refresh.js';
import { bucketWindow, groupPool, type QuotaWindow } from './states.js';

export interface WindowReading {
  readonly remaining: number;
  /** The raw `reset_time`, or null when absent. */
  readonly reset: string | null;
  /** Seconds until the reset (negative once passed), or null when it does not parse. */
  readonly resets_in_seconds: number | null;
}

export interface GroupReadout {
  readonly pool: Pool;
  readonly label: string;
  readonly windows: Readonly<Record<QuotaWindow, WindowReading | null>>;
}

export type ReadoutStatus = 'ok' | 'no-groups' | 'unavailable' | 'not-installed' | 'refresh-started';

export interface Readout {
  readonly path: string;
  readonly managed: boolean;
  readonly status: ReadoutStatus;
  readonly cached_at: number | null;
  readonly age_seconds: number | null;
  readonly plan_tier: string | null;
  readonly refresh_started: boolean;
  readonly groups: readonly GroupReadout[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Per pool and window, the emptiest bucket. Groups and windows are recognised the way routing
 * recognises them (substring names, `window` or `id` suffix), so the readout shows what the
 * gate reads; expired buckets are shown as they are, with "resetting".
 */
function groupReadouts(usage: Record<string, unknown>, planTier: string | null, nowMs: number): GroupReadout[] {
  const found: Partial<Record<Pool, Partial<Record<QuotaWindow, WindowReading>>>> = {};
  const groups = Array.isArray(usage['groups']) ? (usage['groups'] as unknown[]) : [];
  for (const group of groups) {
    if (!isRecord(group)) continue;
    const pool = groupPool(group['name'] ?? '');
    if (pool === null) continue;
    const windows = (found[pool] ??= {});
    const buckets = Array.isArray(group['buckets']) ? (group['buckets'] as unknown[]) : [];
    for (const bucket of buckets) {
      if (!isRecord(bucket)) continue;
      const remaining = bucket['remaining_fraction'];
      const window = bucketWindow(bucket);
      if (window === null || typeof remaining !== 'number' || !Number.isFinite(remaining)) continue;
      const previous = windows[window];
      if (previous !== undefined && previous.remaining <= remaining) continue;
      const reset = typeof bucket['reset_time'] === 'string' && bucket['reset_time'] !== '' ? bucket['reset_time'] : null;
      const instant = reset === null ? null : parseIsoInstant(reset);
      windows[window] = { remaining, reset, resets_in_seconds: instant === null ? null : Math.trunc((instant - nowMs) / 1000) };
    }
  }
  const labels: Record<Pool, string> = { gemini: planTier ? `Gemini/${planTier}` : 'Gemini', second: 'Claude/GPT' };
  return (['gemini', 'second'] as const)
    .filter((pool) => found[pool] !== undefined)
    .map((pool) => ({
      pool,
      label: labels[pool],
      windows: { '5h': found[pool]?.['5h'] ?? null, weekly: found[pool]?.weekly ?? null },
    }));
}

export interface ReadoutOptions {
  readonly env: Env;
  readonly now?: Clock;
  /** Whether agy was found (decides "not installed"). */
  readonly installed: boolean;
  /** Starts a background refresh; called only when the snapshot is stale and no attempt is recent. */
  readonly startRefresh?: () => boolean;
}

/** Whether a background refresh is due: the snapshot and the attempt marker are both older than the TTL. */
export async function backgroundRefreshDue(env: Env, now?: Clock): Promise<boolean> {
  const cachePath = snapshotLocation(env).path;
  const { ttlSeconds } = refreshSettings(env);
  const nowMs = clockMs(now);
  for (const file of [cachePath, attemptMarkerPath(cachePath)]) {
    const age = await fileAgeSeconds(file, nowMs);
    if (age !== null && age < ttlSeconds) return false;
  }
  return true;
}

export async function buildReadout(options: ReadoutOptions): Promise<Readout> {
  const location = snapshotLocation(options.env);
  let refreshStarted = false;
  if (options.installed && options.startRefresh !== undefined && (await backgroundRefreshDue(options.env, options.now))) {
    refreshStarted = options.startRefresh();
  }
  const nowMs = clockMs(options.now);
  const data = await readJsonFile(location.path);
  const base = { path: location.path, managed: location.managed, refresh_started: refreshStarted };
  if (!isRecord(data) || !isRecord(data['usage'])) {
    const status: ReadoutStatus = !options.installed ? 'not-installed' : refreshStarted ? 'refresh-started' : 'unavailable';
    return { ...base, status, cached_at: null, age_seconds: null, plan_tier: null, groups: [] };
  }
  const cachedAt = typeof data['cached_at'] === 'number' ? data['cached_at'] : null;
  const planTier = typeof data['plan_tier'] === 'string' && data['plan_tier'] !== '' ? data['plan_tier'] : null;
  const groups = groupReadouts(data['usage'], planTier, nowMs);
  return {
    ...base,
    status: groups.length === 0 ? 'no-groups' : 'ok',
    cached_at: cachedAt,
    age_seconds: cachedAt === null ? null : nowMs / 1000 - cachedAt,
    plan_tier: planTier,
    groups,
  };
}

/** `resets 2h3m`-style text from seconds until the reset (agent-quota's wording). */
export function resetText(seconds: number): string {
  if (seconds <= 0) return 'resetting';
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (seconds >= 86_400) return `resets ${days}d${hours}h`;
  if (seconds >= 3600) return `resets ${hours}h${minutes}m`;
  if (seconds >= 60) return `resets ${minutes}m`;
  return 'resets <1m';
}

export function ageText(seconds: number | null): string {
  if (seconds === null) return '?';
  if (seconds < 60) return 'just now';
  const whole = Math.floor(seconds);
  if (seconds < 3600) return `${Math.floor(whole / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(whole / 3600)}h${Math.floor((whole % 3600) / 60)}m ago`;
  return `${Math.floor(whole / 86_400)}d ago`;
}

export function cellText(reading: WindowReading | null): string {
  if (reading === null) return '—';
  const used = (1 - Math.min(Math.max(reading.remaining, 0), 1)) * 100;
  const left = `${formatFixed0(Math.max(0, 100 - used))}% left`;
  return reading.resets_in_seconds === null ? left : `${left} (${resetText(reading.resets_in_seconds)})`;
}

const ROW_PREFIX = 'Agy      ';

/** The human readout, one line per group, in agent-quota's Agy row format. */
export function formatReadout(readout: Readout): string[] {
  switch (readout.status) {
    case 'not-installed':
      return [`${ROW_PREFIX}(agy not installed; install the Antigravity CLI or set ANTIGRAVITY_BIN)`];
    case 'refresh-started':
      return [`${ROW_PREFIX}(refresh started)`];
    case 'unavailable':
      return [`${ROW_PREFIX}(quota cache unavailable)`];
    case 'no-groups':
      return [`${ROW_PREFIX}(quota groups unavailable)`];
    case 'ok':
      return readout.groups.map(
        (group) =>
          `${ROW_PREFIX}${group.label.padEnd(12)}  5h ${cellText(group.windows['5h']).padEnd(20)}  7d ${cellText(group.windows.weekly).padEnd(20)}  [${ageText(readout.age_seconds)}]`,
      );
  }
}
