/**
 * What a dispatch needs from quota, without zod: routing, the snapshot's location, and the
 * snapshot loading whose schemas and refresh load on first use. `@prun/quota/dispatch`; the
 * main entry exports all of it too.
 */
import type { RefreshOptions, RefreshResult } from './refresh.js';

export { type Env, type SnapshotLocation, snapshotLocation } from './location.js';
export { QUOTA_EXHAUSTED_EXIT, type RouteDecision, gateEnabled, routeNeedsSnapshot, route, recheckAfterFallback } from './route.js';
export { QUOTA_CACHE_MAX_AGE_SECONDS, type LoadOptions, type RouteForDispatchOptions, loadPoolStatesForDispatch, routeForDispatch } from './load.js';
export type { PoolState, PoolStates } from './states.js';
export type { ParentDeathWrap, RefreshOptions, RefreshResult } from './refresh.js';

/** The main entry's `refresh`, loaded on first call. */
export async function refresh(options: RefreshOptions = {}): Promise<RefreshResult> {
  return (await import('./refresh.js')).refresh(options);
}
