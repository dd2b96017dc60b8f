import type { ResultOutcome, ResultPathState, ResultValue, UnitError } from './classify.js';
import { compareCodePoints } from '@prun/kit/py';
import { hasSurrogate } from './names.js';

export const SCHEMA_VERSION = 1;

/** Printed on every run: in text as these three lines, in JSON as one sentence. */
export const SAFETY_LINES: readonly string[] = [
  'Snapshotting a tail is the only safe operation offered here.',
  'This output does not establish that deleting, overwriting, or',
  'promoting any unit is safe.',
];
export const SAFETY_SENTENCE = SAFETY_LINES.join(' ');

export type DiscoveryError =
  | { stage: 'root'; root: string; error: string }
  | { stage: 'unit-entry'; unit: string; error: string };

/** One unit, with its keys in the order of the JSON contract. */
export interface UnitRecord {
  unit: string;
  errors: UnitError[];
  result_path_state: ResultPathState;
  result: ResultValue;
  result_target: string | null;
  tail_bytes: number | null;
  legacy_pid_unverified?: string | null;
}

export interface UnitObservation {
  unit: string;
  outcome: ResultOutcome;
  tail: { bytes: number | null; error: UnitError | null };
  /** Present only when the legacy pid was asked for. */
  legacyPid?: { value: string | null; error: UnitError | null };
}

/** Build a record with the contract's key order; errors: result, then tail, then legacy pid. */
export function buildRecord(observation: UnitObservation): UnitRecord {
  const { outcome, tail, legacyPid } = observation;
  const errors: UnitError[] = [];
  if (outcome.error !== null) errors.push(outcome.error);
  if (tail.error !== null) errors.push(tail.error);
  if (legacyPid !== undefined && legacyPid.error !== null) errors.push(legacyPid.error);
  const record: UnitRecord = {
    unit: observation.unit,
    errors,
    result_path_state: outcome.pathState,
    result: outcome.result,
    result_target: outcome.target,
    tail_bytes: tail.bytes,
  };
  if (legacyPid !== undefined) record.legacy_pid_unverified = legacyPid.value;
  return record;
}

export interface Summary {
  units: number;
  by_result: Record<string, number>;
  by_path_state: Record<string, number>;
  missing_or_empty_result_bytes: number;
  missing_or_empty_result_units: number;
  unresolved_bytes: number;
  unresolved_units: number;
}

/** Adds one to `counts[key]`: keys stay in first-seen order (they are words, never integer-like). */
function countInto(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/**
 * Counters over every record (not only the shown ones), fed one record at a time so a streamed
 * sweep need not keep its records. A unit whose tail is 0 or unknown counts toward neither byte
 * counter; the two counters never overlap.
 */
export class SummaryCounter {
  private units = 0;
  private missingOrEmptyBytes = 0;
  private missingOrEmptyUnits = 0;
  private unresolvedBytes = 0;
  private unresolvedUnits = 0;
  private readonly byResult: Record<string, number> = {};
  private readonly byPathState: Record<string, number> = {};

  add(record: UnitRecord): void {
    this.units += 1;
    countInto(this.byResult, record.result);
    countInto(this.byPathState, record.result_path_state);
    const bytes = record.tail_bytes ?? 0;
    if (bytes <= 0) return;
    if (record.result === 'missing' || record.result === 'empty') {
      this.missingOrEmptyBytes += bytes;
      this.missingOrEmptyUnits += 1;
    } else if (record.result === 'unknown') {
      this.unresolvedBytes += bytes;
      this.unresolvedUnits += 1;
    }
  }

  summary(): Summary {
    return {
      units: this.units,
      by_result: this.byResult,
      by_path_state: this.byPathState,
      missing_or_empty_result_bytes: this.missingOrEmptyBytes,
      missing_or_empty_result_units: this.missingOrEmptyUnits,
      unresolved_bytes: this.unresolvedBytes,
      unresolved_units: this.unresolvedUnits,
    };
  }
}

/** The summary of a whole list of records (SummaryCounter over each). */
export function buildSummary(records: readonly UnitRecord[]): Summary {
  const counter = new SummaryCounter();
  for (const record of records) counter.add(record);
  return counter.summary();
}

export type SortOrder = 'path' | 'tail-bytes-desc';

export interface DisplayOptions {
  minTailBytes: number;
  sort: SortOrder;
}

/** The display filter: whether `--min-tail-bytes` lets a record be listed (an unknown tail counts as 0). */
export function isShown(record: UnitRecord, minTailBytes: number): boolean {
  return (record.tail_bytes ?? 0) >= minTailBytes;
}

/**
 * The listed units: a display filter (unknown tail counts as 0), then the chosen order.
 * `inPathOrder` says the records are known to be in path order already (a sweep of one root
 * lists them so), which spares the check.
 */
export function selectShown(records: readonly UnitRecord[], { minTailBytes, sort }: DisplayOptions, inPathOrder = false): UnitRecord[] {
  // A tail is never negative, so a bound of 0 or less (the default) hides nothing.
  const shown = minTailBytes <= 0 ? records.slice() : records.filter((r) => isShown(r, minTailBytes));
  if (sort === 'path' && inPathOrder) return shown;
  // Without a surrogate anywhere, UTF-16 order (the native comparison) is code point order; and
  // records in discovery order from one root are in path order already, which one pass can tell.
  let plain = true;
  let ordered = true;
  for (let i = 0; i < shown.length; i += 1) {
    const unit = shown[i]!.unit;
    if (plain && hasSurrogate(unit)) plain = false;
    if (ordered && i > 0 && !(shown[i - 1]!.unit < unit)) ordered = false;
  }
  const byPath = plain
    ? (a: UnitRecord, b: UnitRecord): number => (a.unit < b.unit ? -1 : a.unit > b.unit ? 1 : 0)
    : (a: UnitRecord, b: UnitRecord): number => compareCodePoints(a.unit, b.unit);
  if (sort === 'path') return plain && ordered ? shown : shown.sort(byPath);
  return shown.sort((a, b) => (b.tail_bytes ?? 0) - (a.tail_bytes ?? 0) || byPath(a, b));
}

export interface Report {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  /** Every record, in discovery order. */
  records: UnitRecord[];
  shown: UnitRecord[];
  /** Present when `--summary` was asked for. */
  summary?: Summary;
  includeLegacyPid: boolean;
}

/** Anything not fully observed, hidden units included, makes the sweep partial (exit 1). */
export function isPartial(report: Pick<Report, 'discoveryErrors' | 'records'>): boolean {
  return report.discoveryErrors.length > 0 || report.records.some((r) => r.errors.length > 0);
}

export function buildReport(input: {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  records: UnitRecord[];
  /** The records are in path order already (a sweep's `inPathOrder`). */
  inPathOrder?: boolean;
  display: DisplayOptions;
  withSummary: boolean;
  includeLegacyPid: boolean;
}): Report {
  const report: Report = {
    roots: input.roots,
    discoveryErrors: input.discoveryErrors,
    records: input.records,
    shown: selectShown(input.records, input.display, input.inPathOrder === true),
    includeLegacyPid: input.includeLegacyPid,
  };
  if (input.withSummary) report.summary = buildSummary(input.records);
  return report;
}
