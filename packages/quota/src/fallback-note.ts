// Reading the quota MODEL-FALLBACK note back (a `<state-dir>/quota-note` line, or a stderr line
// with its `<bin>: ` prefix): the writer is `quotaFallbackNote`, so the shape lives beside it.
import { QUOTA_FALLBACK_REASON } from './route.js';

/** A quota fallback as its note names it: the model asked for, the one run, the group's reset. */
export interface QuotaFallback {
  readonly from: string;
  readonly to: string;
  /** The exhausted group's reset as the snapshot gave it, or `later` when unknown. */
  readonly resets: string;
}

// An optional `<bin>: ` prefix (a bin name is lower-case: stderr), then the note's fields in the order the writer puts them.
const NOTE = new RegExp(`^(?:[a-z][a-z0-9-]*: )?MODEL-FALLBACK from=(\\S+) to=(\\S+) reason=${QUOTA_FALLBACK_REASON} resets=(.+)$`);

/**
 * The quota fallback one line records, or null for any other line, including a MODEL-FALLBACK
 * with another reason (a template-unlisted model is a listing matter, not a quota one).
 */
export function parseQuotaFallbackNote(line: string): QuotaFallback | null {
  const match = NOTE.exec(line.trim());
  if (match === null) return null;
  return { from: match[1] as string, to: match[2] as string, resets: match[3] as string };
}

/** Whether any line of `text` (a quota-note file, a captured stderr) is a quota fallback note. */
export function hasQuotaFallbackNote(text: string): boolean {
  return text.split(/\r?\n/).some((line) => parseQuotaFallbackNote(line) !== null);
}
