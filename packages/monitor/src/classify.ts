import { isFallbackFirstLine } from '@prun/unit-state';

/** What the monitor says about one unit at one instant. */
export type UnitStatus =
  | { kind: 'done' }
  | { kind: 'failed-fallback' }
  | { kind: 'failed-dispatch-dead' }
  | { kind: 'stalled'; seconds: number }
  | { kind: 'growing' }
  | { kind: 'finishing' };

/** The four `MONITOR-EVENT` values a watch can end with. */
export type MonitorEvent = 'fail' | 'stall' | 'all-done' | 'timeout';

export interface ClassifySettings {
  /** Seconds without tail growth before a unit counts as stalled (and its dispatcher is checked). */
  stallThresholdS: number;
  /** Seconds a non-empty result must have been quiet before it counts. */
  stableWindowS: number;
}

/** What the monitor remembers about a unit between observations. */
export interface UnitMemory {
  lastSize: number;
  lastMtimeMs: number;
  lastGrowthMs: number;
}

/** A result that counts as present: a regular file with at least one byte. */
export interface ResultFacts {
  size: number;
  mtimeMs: number;
  firstLine: string;
}

export interface TailFacts {
  size: number;
  mtimeMs: number;
}

/** Everything observed about one unit in one pass (files only; liveness is asked lazily). */
export interface UnitFacts {
  /** Null when there is no entry, no file, an empty file or not a regular file. */
  result: ResultFacts | null;
  /** Null when the tail does not exist (it then counts as size 0, mtime 0). */
  tail: TailFacts | null;
}

/** `unknown` when `dispatch-pid` holds no usable pid. */
export type DispatchLiveness = 'alive' | 'dead' | 'unknown';

export interface Classification {
  status: UnitStatus;
  memory: UnitMemory;
  /** When this unit's status can next change without any file event (ms epoch), if ever. */
  wakeAtMs: number | null;
}

/** A unit first seen at `joinedAtMs`: its stall clock starts then. */
export function initialMemory(joinedAtMs: number): UnitMemory {
  return { lastSize: -1, lastMtimeMs: 0, lastGrowthMs: joinedAtMs };
}

/**
 * Classify one unit at `nowMs`. `probeDispatch` is asked only when the unit has no present
 * result and has been quiet for the whole stall threshold, so a unit with a result is never
 * declared dead. Times are compared in milliseconds against windows given in whole seconds.
 */
export function classifyUnit(
  memory: UnitMemory,
  facts: UnitFacts,
  probeDispatch: () => DispatchLiveness,
  settings: ClassifySettings,
  nowMs: number,
): Classification {
  const { result } = facts;
  if (result) {
    const stableAtMs = result.mtimeMs + settings.stableWindowS * 1000;
    if (nowMs >= stableAtMs) {
      const status: UnitStatus = isFallbackFirstLine(result.firstLine) ? { kind: 'failed-fallback' } : { kind: 'done' };
      return { status, memory, wakeAtMs: null };
    }
    return { status: { kind: 'finishing' }, memory, wakeAtMs: stableAtMs };
  }

  const size = facts.tail?.size ?? 0;
  const mtimeMs = facts.tail?.mtimeMs ?? 0;
  const thresholdMs = settings.stallThresholdS * 1000;
  if (size > memory.lastSize || mtimeMs > memory.lastMtimeMs) {
    const grown = { lastSize: size, lastMtimeMs: mtimeMs, lastGrowthMs: nowMs };
    // Threshold 0: quiet for zero seconds is already a stall, so look again right away.
    return { status: { kind: 'growing' }, memory: grown, wakeAtMs: nowMs + thresholdMs };
  }
  const quietMs = nowMs - memory.lastGrowthMs;
  if (quietMs < thresholdMs) {
    return { status: { kind: 'growing' }, memory, wakeAtMs: memory.lastGrowthMs + thresholdMs };
  }
  if (probeDispatch() === 'dead') return { status: { kind: 'failed-dispatch-dead' }, memory, wakeAtMs: null };
  return { status: { kind: 'stalled', seconds: Math.floor(quietMs / 1000) }, memory, wakeAtMs: null };
}

/** The status word printed on a `UNIT` line. */
export function formatStatus(status: UnitStatus): string {
  switch (status.kind) {
    case 'done':
      return 'done';
    case 'failed-fallback':
      return 'failed(fallback)';
    case 'failed-dispatch-dead':
      return 'failed(dispatch-dead)';
    case 'stalled':
      return `stalled(${status.seconds}s)`;
    case 'growing':
      return 'growing';
    case 'finishing':
      return 'finishing';
  }
}

export interface EventContext {
  nowMs: number;
  startMs: number;
  timeoutS: number;
  /** False while more operands may still arrive (stdin not ended): all-done must wait. */
  operandsComplete: boolean;
}

/**
 * The event a pass ends with, by priority fail > stall > all-done > timeout, or null to keep
 * watching. A fail or stall is true of its unit whatever else arrives, so it may end a watch
 * whose operand list is still open; all-done needs the complete list.
 */
export function decideEvent(statuses: readonly UnitStatus[], context: EventContext): MonitorEvent | null {
  if (statuses.some((s) => s.kind === 'failed-fallback' || s.kind === 'failed-dispatch-dead')) return 'fail';
  if (statuses.some((s) => s.kind === 'stalled')) return 'stall';
  if (context.operandsComplete && statuses.length > 0 && statuses.every((s) => s.kind === 'done')) return 'all-done';
  if (context.nowMs - context.startMs >= context.timeoutS * 1000) return 'timeout';
  return null;
}

/** Exit code of each event: 0 all done, 3 stall or fail, 2 timeout. */
export function eventExitCode(event: MonitorEvent): number {
  return event === 'all-done' ? 0 : event === 'timeout' ? 2 : 3;
}

/** Shell `basename`: trailing slashes ignored, `/` stays `/`. */
export function unitName(stateDir: string): string {
  const trimmed = stateDir.replace(/\/+$/, '');
  if (trimmed === '') return stateDir === '' ? '' : '/';
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}
