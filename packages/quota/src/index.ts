export { type Env, type SnapshotLocation, snapshotLocation, managedSnapshotPath, homeDir, attemptMarkerPath, refreshLockPath } from './location.js';
export { type Clock, clockMs } from './clock.js';
export {
  REQUIRED_WINDOWS,
  type QuotaWindow,
  type PoolState,
  type PoolStates,
  type BucketReading,
  type Snapshot,
  SnapshotSchema,
  SnapshotBucketSchema,
  SnapshotGroupSchema,
  UsageDataSchema,
  WrittenSnapshotSchema,
  readPoolStates,
  readBuckets,
  groupPool,
  bucketWindow,
  stillEmpty,
} from './states.js';
export {
  QUOTA_EXHAUSTED_EXIT,
  BALANCE_MARGIN,
  MARGIN_TOLERANCE,
  GATE_OFF_VALUES,
  BOTH_EXHAUSTED_PHRASE,
  GEMINI_EXHAUSTED_PHRASE,
  UNKNOWN_RESET,
  type RouteDecision,
  gateEnabled,
  routeNeedsSnapshot,
  route,
  balance,
  recheckAfterFallback,
  bothExhaustedText,
  geminiExhaustedText,
  balanceNote,
  quotaFallbackNote,
  QUOTA_FALLBACK_REASON,
} from './route.js';
export { isQuotaBlock, blockResetTimes, earliestBlockReset } from './block.js';
export { type QuotaFallback, parseQuotaFallbackNote, hasQuotaFallbackNote } from './fallback-note.js';
export { QUOTA_CACHE_MAX_AGE_SECONDS, type LoadOptions, type RouteForDispatchOptions, loadPoolStatesForDispatch, routeForDispatch } from './load.js';
export {
  REFRESH_TTL_SECONDS,
  REFRESH_QUERY_TIMEOUT_SECONDS,
  STALE_LOCK_GRACE_SECONDS,
  QUERY_DEADLINE_GRACE_SECONDS,
  type RefreshReason,
  type RefreshResult,
  type RefreshOptions,
  type ParentDeathWrap,
  type UsageQuery,
  type UsageQueryResult,
  type UsageRunner,
  UsagePayloadSchema,
  refresh,
  refreshSettings,
  findAgyForRefresh,
  runUsageQuery,
  snapshotText,
} from './refresh.js';
export { formatPercent, formatFixed0, roundHalfEven } from './percent.js';
export { parseIsoInstant } from './iso-time.js';
export { parseJsonLenient, pythonJsonDumps } from './json.js';
export { readJsonFile, fileAgeSeconds, writeFileAtomic } from './files.js';
export {
  type Readout,
  type ReadoutStatus,
  type ReadoutOptions,
  type GroupReadout,
  type WindowReading,
  buildReadout,
  formatReadout,
  backgroundRefreshDue,
  cellText,
  resetText,
  ageText,
} from './readout.js';
