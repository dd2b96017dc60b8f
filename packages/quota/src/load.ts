import { fileAgeSeconds, readJsonFile } from './files.js';
import { snapshotLocation, type Env } from './location.js';
import type { RefreshOptions, RefreshResult } from './refresh.js';
import { route, routeNeedsSnapshot, type RouteDecision } from './route.js';
import { clockMs, type Clock } from './clock.js';
import type { PoolStates } from './states.js';

/** The managed snapshot is used for routing only while it is at most this old (by mtime). */
export const QUOTA_CACHE_MAX_AGE_SECONDS = 900;

export interface LoadOptions {
  readonly env: Env;
  readonly now?: Clock;
  /** Injected for tests; defaults to this package's `refresh`. */
  readonly refresh?: (options: RefreshOptions) => Promise<RefreshResult>;
}

async function usable(filePath: string, nowMs: number): Promise<boolean> {
  const age = await fileAgeSeconds(filePath, nowMs);
  return age !== null && age <= QUOTA_CACHE_MAX_AGE_SECONDS;
}

/**
 * Loading for a dispatch (README: How it works): an `AGY_QUOTA_CACHE` file is read as it is; the managed file
 * must be at most 900 s old, else one non-forced refresh runs and it is checked again. Returns
 * null ("no gate") for anything unusable. Never throws.
 */
export async function loadPoolStatesForDispatch(options: LoadOptions): Promise<PoolStates | null> {
  try {
    const location = snapshotLocation(options.env);
    if (location.managed && !(await usable(location.path, clockMs(options.now)))) {
      // The refresh and the snapshot schemas (zod) load only when used: a dispatch without a
      // usable snapshot pays for neither (packages/quota/README.md, "Library").
      const refresh = options.refresh ?? (await import('./refresh.js')).refresh;
      await refresh({ force: false, env: options.env, ...(options.now === undefined ? {} : { now: options.now }) }).catch(
        () => undefined,
      );
      if (!(await usable(location.path, clockMs(options.now)))) return null;
    }
    const snapshot = await readJsonFile(location.path);
    // Missing, unreadable or not JSON: no gate (what the schema would decide too, without loading it).
    if (snapshot === null) return null;
    const { readPoolStates } = await import('./states.js');
    return readPoolStates(snapshot, clockMs(options.now));
  } catch {
    return null;
  }
}

export interface RouteForDispatchOptions extends LoadOptions {
  readonly model: string;
  readonly pinned: boolean;
}

/** Pre-checks, snapshot and route in one call; the snapshot is not touched when the gate is off or the model has no pool. */
export async function routeForDispatch(options: RouteForDispatchOptions): Promise<RouteDecision> {
  if (!routeNeedsSnapshot(options.model, options.env)) return { model: options.model };
  const states = await loadPoolStatesForDispatch(options);
  return route(options.model, options.pinned, states, options.env);
}
