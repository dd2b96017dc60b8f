// The live panel of a batch as plain data and the pure function that turns it into lines. No
// I/O here: the sampler (sample.ts) fills a PanelState, the terminal (terminal.ts) draws lines.
import { printable } from '@prun/kit/cli';
import { formatBytes, formatElapsed } from '@prun/monitor';
import type { UnitStatus } from '../ledger.js';

/** One unit as the panel shows it. */
export interface PanelUnit {
  id: string;
  /** `unknown`: the plan names it but the ledger has no line for it yet. */
  status: UnitStatus | 'unknown';
  startedAtMs: number | null;
  endedAtMs: number | null;
  /** Null when the unit has no state directory or no tail yet. */
  tailBytes: number | null;
  /** Bytes per second over the last few seconds; null until two samples exist. */
  growthPerS: number | null;
  model: string | null;
  stalled: boolean;
  /** `deferred`: when its next attempt is due. */
  retryAtMs: number | null;
  attempt: number;
}

/** One quota group from the snapshot: its label and the smallest remaining fraction of its windows. */
export interface QuotaGroupView {
  label: string;
  remaining: number;
}

export interface PanelState {
  /** The batch directory as the user named it (shown in the header). */
  dir: string;
  units: PanelUnit[];
  /** When the batch (this driver) started. */
  startedAtMs: number;
  nowMs: number;
  /** Units at once (`--jobs`); null when unknown (a watcher). */
  jobs: number | null;
  /** Null when there is no usable quota snapshot. */
  quota: QuotaGroupView[] | null;
}

export interface PanelSize {
  columns: number;
  rows: number;
}

/** Colours for a terminal; identity functions for plain text (tests, no colour). */
export interface Paint {
  green: (text: string) => string;
  red: (text: string) => string;
  yellow: (text: string) => string;
  cyan: (text: string) => string;
  dim: (text: string) => string;
  bold: (text: string) => string;
}

const same = (text: string): string => text;
export const NO_PAINT: Paint = { green: same, red: same, yellow: same, cyan: same, dim: same, bold: same };

/** How long a finished unit keeps its own line before it collapses into the counts. */
export const RECENT_MS = 15_000;

/** Statuses of a unit that has not settled: it runs, waits for its turn, or will run again. */
const UNSETTLED = new Set<string>(['running', 'queued', 'deferred', 'interrupted', 'unknown']);
/** A settled unit: done, failed, invalid, or any end status a newer ledger adds (such as cancelled). */
const isFinished = (status: string): boolean => !UNSETTLED.has(status);
/** Settled statuses that are no success. */
const isBad = (status: string): boolean => isFinished(status) && status !== 'done';

/** countUnits names these, zero or not, in the header's order; any other status present follows. */
const ALWAYS = ['done', 'failed', 'invalid', 'running', 'queued', 'deferred'] as const;


export type PanelCounts = Record<(typeof ALWAYS)[number], number> & Record<string, number>;

export function countUnits(units: readonly PanelUnit[]): PanelCounts {
  const counts: Record<string, number> = Object.fromEntries(ALWAYS.map((status) => [status, 0]));
  // A unit the ledger has not named yet waits like a queued one.
  for (const unit of units) {
    const status = unit.status === 'unknown' ? 'queued' : unit.status;
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts as PanelCounts;
}

/**
 * Units whose duration measures a unit's work: they ran to their end (done, or a result that
 * failed its checks). A cancelled, killed, timed-out or dependency-failed unit stopped early.
 */
const RAN_TO_COMPLETION = new Set<string>(['done', 'invalid']);

/**
 * Time left, from the durations of the units that ran to completion: the work still to do
 * (every unit not started at the mean duration, every running one for what the mean leaves of
 * it) shared over the units that can run at once. Null until such a unit exists.
 */
export function etaMs(state: PanelState): number | null {
  const durations = state.units
    .filter((unit) => RAN_TO_COMPLETION.has(unit.status) && unit.startedAtMs !== null && unit.endedAtMs !== null)
    .map((unit) => Math.max(0, unit.endedAtMs! - unit.startedAtMs!));
  if (durations.length === 0) return null;
  const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
  let work = 0;
  let open = 0;
  for (const unit of state.units) {
    if (unit.status === 'running') {
      work += Math.max(0, mean - (unit.startedAtMs === null ? 0 : state.nowMs - unit.startedAtMs));
      open += 1;
    } else if (!isFinished(unit.status)) {
      work += mean;
      open += 1;
    }
  }
  if (open === 0) return 0;
  const lanes = Math.max(1, Math.min(state.jobs ?? open, open));
  return work / lanes;
}

/** `Gemini 12% left · Claude/GPT 90% left`. */
function quotaText(groups: readonly QuotaGroupView[]): string {
  return groups.map((group) => `${group.label} ${Math.round(group.remaining * 100)}% left`).join(' · ');
}

/**
 * The header: `prun batch DIR`, the done count out of the total and every other count that is
 * not zero, elapsed time and the ETA, wrapped (never cut) onto as many lines as `columns` needs,
 * so the times show at 80 columns; then quota and the deferral countdown.
 */
export function headerLines(state: PanelState, paint: Paint = NO_PAINT, columns = Number.POSITIVE_INFINITY): string[] {
  const counts = countUnits(state.units);
  const total = state.units.length;
  /** [plain, painted] pieces, joined by two spaces. */
  const pieces: Array<[string, string]> = [[`prun batch ${printable(state.dir)}`, `${paint.cyan('prun batch')} ${printable(state.dir)}`]];
  const piece = (text: string, colour: (text: string) => string = same): void => void pieces.push([text, colour(text)]);
  piece(`${counts.done}/${total} done`, paint.bold);
  const colours: Record<string, (text: string) => string> = { failed: paint.red, invalid: paint.red, running: same, queued: same };
  for (const [status, n] of Object.entries(counts)) {
    if (status !== 'done' && n > 0) piece(`${n} ${status}`, colours[status] ?? paint.yellow);
  }
  piece(`elapsed ${formatElapsed(state.nowMs - state.startedAtMs)}`, paint.dim);
  const eta = etaMs(state);
  if (eta !== null) piece(`ETA ${formatElapsed(eta)}`, paint.dim);
  const lines: string[] = [];
  let width = 0;
  for (const [plain, painted] of pieces) {
    if (lines.length === 0 || width + 2 + plain.length > columns - 1) {
      lines.push(painted);
      width = plain.length;
    } else {
      lines[lines.length - 1] += `  ${painted}`;
      width += 2 + plain.length;
    }
  }
  const quota: string[] = [];
  if (state.quota !== null && state.quota.length > 0) quota.push(quotaText(state.quota));
  const due = state.units.filter((unit) => unit.status === 'deferred' && unit.retryAtMs !== null).map((unit) => unit.retryAtMs!);
  if (due.length > 0) {
    const next = Math.min(...due);
    quota.push(paint.yellow(`${due.length} deferred, next try in ${formatElapsed(Math.max(0, next - state.nowMs))}`));
  }
  if (quota.length > 0) lines.push(`quota: ${quota.join('  ')}`);
  return lines;
}

/** One unit's line: id, status, elapsed, tail and growth, model, and the stall marker. */
export function unitLine(unit: PanelUnit, nowMs: number, idWidth: number, paint: Paint = NO_PAINT): string {
  // Wide enough for the longest status (`cancelled`, `deferred`) so every column lines up.
  const statusText = unit.status.padEnd(9);
  const status =
    unit.status === 'done'
      ? paint.green(statusText)
      : isBad(unit.status)
        ? paint.red(statusText)
        : unit.status === 'deferred'
          ? paint.yellow(statusText)
          : statusText;
  const end = unit.endedAtMs ?? nowMs;
  const deferred = unit.status === 'deferred';
  const elapsed = unit.startedAtMs === null || deferred ? '-' : formatElapsed(end - unit.startedAtMs);
  const tail = unit.tailBytes === null ? 'no tail' : `tail ${formatBytes(unit.tailBytes)}`;
  const growth = unit.status === 'running' && unit.growthPerS !== null ? ` +${formatBytes(unit.growthPerS)}/s` : '';
  const fields = [`${unit.id.padEnd(idWidth)}`, status, elapsed.padStart(6), `${tail}${growth}`.padEnd(24)];
  if (deferred && unit.retryAtMs !== null) fields.push(paint.yellow(`retry in ${formatElapsed(Math.max(0, unit.retryAtMs - nowMs))}`));
  // The model is read from the plan, the ledger or the state directory: shown escaped, as the directory is.
  else if (unit.model !== null) fields.push(paint.dim(printable(unit.model)));
  if (unit.attempt > 1) fields.push(paint.dim(`attempt ${unit.attempt}`));
  if (unit.stalled && unit.status === 'running') fields.push(paint.yellow('STALLED'));
  return `  ${fields.join('  ')}`.trimEnd();
}

/**
 * Which units get a line of their own, within `room` lines: every running (stalled first) and
 * deferred unit, then the finished ones of the last RECENT_MS (newest first, failures before
 * successes). The rest are collapsed into one `... N more` line, so a 200-unit batch fits.
 */
export function visibleUnits(state: PanelState, room: number): { shown: PanelUnit[]; hidden: PanelUnit[] } {
  const active = state.units
    .filter((unit) => unit.status === 'running' || unit.status === 'deferred')
    .sort(
      (a, b) =>
        Number(b.stalled) - Number(a.stalled) ||
        Number(b.status === 'running') - Number(a.status === 'running') ||
        (a.startedAtMs ?? 0) - (b.startedAtMs ?? 0),
    );
  const recent = state.units
    .filter((unit) => isFinished(unit.status) && unit.endedAtMs !== null && state.nowMs - unit.endedAtMs <= RECENT_MS)
    .sort((a, b) => Number(b.status !== 'done') - Number(a.status !== 'done') || b.endedAtMs! - a.endedAtMs!);
  const candidates = [...active, ...recent];
  const fits = candidates.length <= room ? candidates.length : Math.max(0, room - 1);
  return { shown: candidates.slice(0, fits), hidden: candidates.slice(fits) };
}

/** The whole panel, at most `size.rows - 1` lines (the cursor's line stays free). Lines are not yet cut to width. */
export function panelLines(state: PanelState, size: PanelSize, paint: Paint = NO_PAINT): string[] {
  const header = headerLines(state, paint, size.columns);
  const room = Math.max(1, size.rows - 1 - header.length);
  const { shown, hidden } = visibleUnits(state, room);
  const idWidth = Math.min(24, Math.max(4, ...shown.map((unit) => unit.id.length)));
  const lines = [...header, ...shown.map((unit) => unitLine(unit, state.nowMs, idWidth, paint))];
  if (hidden.length > 0) {
    const running = hidden.filter((unit) => unit.status === 'running').length;
    const what = running > 0 ? `${running} more running` : `${hidden.length} more`;
    lines.push(paint.dim(`  ... ${what} (prun status ${printable(state.dir)} lists every unit)`));
  }
  // A header taller than the terminal (a pane of a few rows) is cut too: a frame that reached the
  // last row would scroll its first line into the scroll-back at every redraw.
  return lines.slice(0, Math.max(0, size.rows - 1));
}
