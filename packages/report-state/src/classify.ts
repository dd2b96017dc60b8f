import { posix } from 'node:path';
import { pyErrorName, pyStrip } from '@prun/kit/py';
import type { EntryProblem } from '@prun/unit-state';
import { decodeSurrogateEscape, isUtf8 } from './names.js';

/**
 * What a read of a state entry gave: its text (decoded with U+FFFD for bytes that are not UTF-8)
 * and, where the reader has them, its bytes; or why not (unit-state's EntryRead is one).
 */
export type EntryText = { ok: true; text: string; bytes?: Uint8Array } | { ok: false; problem: EntryProblem };

/** How far the unit's `result-file` entry got us towards a result path. */
export type ResultPathState = 'resolved' | 'absent-entry' | 'invalid-entry' | 'unreadable';
/** What was observed at the result path. */
export type ResultValue = 'present' | 'empty' | 'missing' | 'unknown';
export type UnitStage = 'result-entry' | 'result-target' | 'result' | 'tail' | 'legacy-pid';

/**
 * One observation that failed: where, and the Python exception class name (`PermissionError`,
 * `FileNotFoundError`, `OSError`, ...) or the named condition `NotARegularFile` / `EntryTooLarge`.
 */
export interface UnitError {
  stage: UnitStage;
  error: string;
}

/** The only `(result_path_state, result)` pairs a record may carry. */
export const LEGAL_RESULT_PAIRS: Readonly<Record<ResultPathState, readonly ResultValue[]>> = {
  resolved: ['present', 'empty', 'missing', 'unknown'],
  'absent-entry': ['unknown'],
  'invalid-entry': ['unknown'],
  unreadable: ['unknown'],
};

export function isLegalResultPair(pathState: string, result: string): boolean {
  const allowed = (LEGAL_RESULT_PAIRS as Record<string, readonly string[] | undefined>)[pathState];
  return allowed !== undefined && allowed.includes(result);
}

/** A stat that follows symlinks, reduced to what classification needs. */
export type StatFact =
  | { kind: 'regular'; size: number }
  | { kind: 'not-regular' }
  | { kind: 'absent' }
  | { kind: 'error'; code: string };

export interface ResultOutcome {
  pathState: ResultPathState;
  result: ResultValue;
  target: string | null;
  error: UnitError | null;
}

/** The entry named a path that must now be stated; `relative` is set for in-unit entries. */
export interface ResultTarget {
  target: string;
  relative: string | null;
}

function unresolved(pathState: Exclude<ResultPathState, 'resolved'>, error: UnitError | null = null): ResultOutcome {
  return { pathState, result: 'unknown', target: null, error };
}

function normalizeBelow(unit: string, entry: string): string | null {
  let joined = posix.normalize(`${unit}/${entry}`);
  while (joined.length > 1 && joined.endsWith('/')) joined = joined.slice(0, -1);
  // A prefix test on normalized text, as the original: it does not resolve symlinks.
  return joined.startsWith(`${unit}/`) ? joined : null;
}

/**
 * The `result-file` entry as the text of a path: when its bytes are not UTF-8, decoded as names
 * are (each undecodable byte kept as the escape U+DC80+b, Python's surrogateescape), so the path
 * stated is the one the entry names and JSON shows it as `\udcXX`, where U+FFFD would name
 * another file. Other entries keep U+FFFD (their text is only shown, never a path).
 */
export function entryPathText(entry: EntryText): EntryText {
  if (!entry.ok || entry.bytes === undefined || isUtf8(entry.bytes)) return entry;
  return { ok: true, text: decodeSurrogateEscape(entry.bytes) };
}

/**
 * First half of the result classification: what the `result-file` entry says. Either a final
 * outcome (absent, unreadable, invalid entry) or the target path to observe next.
 */
export function resolveEntry(entry: EntryText, unit: string): ResultOutcome | ResultTarget {
  if (!entry.ok) {
    if (entry.problem === 'absent') return unresolved('absent-entry');
    return unresolved('unreadable', { stage: 'result-entry', error: pyErrorName(entry.problem) });
  }
  const text = pyStrip(entry.text);
  if (text === '') return unresolved('invalid-entry');
  if (text.startsWith('/')) return { target: text, relative: null };
  const joined = normalizeBelow(unit, text);
  if (joined === null) return unresolved('invalid-entry');
  return { target: joined, relative: joined.slice(unit.length + 1) };
}

/** Second half: what the stat of the target showed. Only a real absence is `missing`. */
export function classifyTarget(target: string, fact: StatFact): ResultOutcome {
  switch (fact.kind) {
    case 'absent':
      return { pathState: 'resolved', result: 'missing', target, error: null };
    case 'error':
      return { pathState: 'resolved', result: 'unknown', target, error: { stage: 'result-target', error: pyErrorName(fact.code) } };
    case 'not-regular':
      return { pathState: 'resolved', result: 'unknown', target, error: { stage: 'result-target', error: 'NotARegularFile' } };
    case 'regular':
      return { pathState: 'resolved', result: fact.size > 0 ? 'present' : 'empty', target, error: null };
  }
}

/** When classification itself failed unexpectedly: the unit is still reported, as unknown. */
export function failedClassification(errorName: string): ResultOutcome {
  return unresolved('unreadable', { stage: 'result', error: errorName });
}

/** `tail_bytes`: 0 when there is no tail, null (with an error) when it cannot be measured. */
export function tailBytesOf(fact: StatFact): { bytes: number | null; error: UnitError | null } {
  switch (fact.kind) {
    case 'regular':
      return { bytes: fact.size, error: null };
    case 'absent':
      return { bytes: 0, error: null };
    case 'not-regular':
      return { bytes: null, error: { stage: 'tail', error: 'NotARegularFile' } };
    case 'error':
      return { bytes: null, error: { stage: 'tail', error: pyErrorName(fact.code) } };
  }
}

/** `legacy_pid_unverified`: the stripped text, never interpreted; null when unavailable. */
export function legacyPidOf(entry: EntryText): { value: string | null; error: UnitError | null } {
  if (entry.ok) return { value: pyStrip(entry.text), error: null };
  if (entry.problem === 'absent') return { value: null, error: null };
  return { value: null, error: { stage: 'legacy-pid', error: pyErrorName(entry.problem) } };
}
