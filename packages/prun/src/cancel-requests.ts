// How `prun cancel` reaches a batch whose driver is alive: one file per unit in `<batch>/cancel/`
// (its text names who asked), which the driver looks for on every turn of its loop, acts on
// (ledger first, then the stop) and removes. A request left behind by a driver that died first
// is acted on by the next driver, or by `prun cancel` itself once no driver holds the batch.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readHead } from '@prun/kit/fs';
import { FALLBACK_CONCLUSION_PREFIX, publishAtomic, renderFallback, type ResultSummary } from '@prun/unit-state';

export const CANCEL_FOLDER = 'cancel';

export interface CancelRequest {
  id: string;
  /** Who asked, e.g. `prun cancel (pid 4242)`. */
  by: string;
}

const folder = (batchDir: string): string => join(batchDir, CANCEL_FOLDER);

/** Ask the batch's driver to cancel `id` (published atomically: a driver never reads half a request). */
export function writeCancelRequest(batchDir: string, id: string, by: string): void {
  mkdirSync(folder(batchDir), { recursive: true });
  publishAtomic(join(folder(batchDir), id), `${by}\n`, { tag: 'prun' });
}

/** The requests waiting, for units among `ids` (anything else in the folder is ignored). */
export function pendingCancelRequests(batchDir: string, ids: ReadonlySet<string>): CancelRequest[] {
  let names: string[];
  try {
    names = readdirSync(folder(batchDir));
  } catch {
    return [];
  }
  const requests: CancelRequest[] = [];
  for (const name of names) {
    if (!ids.has(name)) continue;
    const head = readHead(join(folder(batchDir), name), { maxBytes: 1024 });
    requests.push({ id: name, by: head.ok && head.text.trim() !== '' ? head.text.trim() : 'prun cancel' });
  }
  return requests;
}

/** Remove a request once the ledger records what it did. */
export function clearCancelRequest(batchDir: string, id: string): void {
  rmSync(join(folder(batchDir), id), { force: true });
}

/**
 * A dispatcher's FALLBACK rewritten to name the control that stopped the unit (a cancel, a
 * halt): its `Conclusion:` and `Open items:` lines
 * carry `reason` (which already says how the dispatch ended); the header, the other lines and
 * the captured worker output stay. Null when the text is not a FALLBACK in that shape.
 */
export function stoppedResultText(text: string, reason: string): string | null {
  const lines = text.split('\n');
  const conclusion = lines.findIndex((line) => line.startsWith('Conclusion: '));
  const openItems = lines.findIndex((line) => line.startsWith('Open items: '));
  if (conclusion === -1 || openItems === -1 || conclusion > 8 || openItems > 8) return null;
  lines[conclusion] = `Conclusion: ${FALLBACK_CONCLUSION_PREFIX}${reason}`;
  lines[openItems] = `Open items: ${reason}`;
  return lines.join('\n');
}

/** The largest result prun rewrites to name a cancel or halt; a larger one gets a FALLBACK of its own. */
const MAX_REWRITTEN_RESULT_BYTES = 16 * 1024 * 1024;

/**
 * The result of a unit a control stopped (a cancel, a halt) names it: the dispatcher's FALLBACK
 * (which names the signal and keeps the worker's output) with its reason lines saying so, or a
 * FALLBACK of prun's own when the dispatcher published none. Any other result is left as it is.
 */
export function publishStoppedResult(path: string, unitId: string, result: ResultSummary | 'unparsed' | null, note: string): void {
  if (result === 'unparsed' || (result !== null && !result.fallback)) return;
  let text: string | null = null;
  if (result !== null) {
    const head = readHead(path, { maxBytes: MAX_REWRITTEN_RESULT_BYTES, overflow: 'refuse' });
    text = head.ok ? stoppedResultText(head.text, note) : null;
  }
  publishAtomic(path, text ?? renderFallback({ unitId, reason: note }), { tag: 'prun' });
}
