// The windows Agy meters, apart from the snapshot schemas (states.ts) so that routing (route.ts)
// and the dispatch entry (dispatch.ts) load no zod.

/** The two windows Agy meters. A move on headroom needs both reported for the destination. */
export const REQUIRED_WINDOWS = ['5h', 'weekly'] as const;
export type QuotaWindow = (typeof REQUIRED_WINDOWS)[number];
