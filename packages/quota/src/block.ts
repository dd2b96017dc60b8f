// Reading a quota block back: what `route` refused with, as another tool sees it (a FALLBACK
// reason, a dispatcher's stderr). The phrases come from the functions that write the texts, so a
// rewording here cannot silently break a reader elsewhere.
import { parseIsoInstant } from './iso-time.js';
import { BOTH_EXHAUSTED_PHRASE, GEMINI_EXHAUSTED_PHRASE } from './route.js';

/** Whether `text` holds a quota block as `route` words it (exit QUOTA_EXHAUSTED_EXIT, 75). */
export function isQuotaBlock(text: string): boolean {
  return text.includes(BOTH_EXHAUSTED_PHRASE) || text.includes(GEMINI_EXHAUSTED_PHRASE);
}

// `resets <stamp>` up to the `,` or `)` that ends it in the block texts.
const RESET = /resets ([^,)\s]+)/g;

/**
 * The reset times a block text names, as epoch milliseconds, in text order. `resets later` (no
 * time known) and anything that is not an ISO-8601 instant are left out; a stamp without a zone
 * is UTC, as the snapshot's reset times are read.
 */
export function blockResetTimes(text: string): number[] {
  const times: number[] = [];
  for (const match of text.matchAll(RESET)) {
    const at = parseIsoInstant(match[1] as string);
    if (at !== null) times.push(at);
  }
  return times;
}

/** The earliest reset a block text names (epoch ms), or null when it names none. */
export function earliestBlockReset(text: string): number | null {
  const times = blockResetTimes(text);
  return times.length === 0 ? null : Math.min(...times);
}
