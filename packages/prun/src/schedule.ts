import { earliestBlockReset } from '@prun/quota';
import type { UnitStatus } from './ledger.js';
import { blocksDependents } from './outcome.js';

export interface ScheduleUnit {
  id: string;
  dependsOn: string[];
}

export interface ScheduleView {
  /** Units in plan order. */
  units: ScheduleUnit[];
  status: ReadonlyMap<string, UnitStatus>;
  /** When each deferred unit may be tried again (ms since epoch). */
  retryAt: ReadonlyMap<string, number>;
  running: number;
  jobs: number;
  now: number;
  /** False once the batch is stopping (interrupt, or quota with --no-quota-wait). */
  startingAllowed: boolean;
}

export interface ScheduleDecision {
  /** Pending units that can never run because a dependency failed, is invalid or was cancelled: [unit, that dependency]. */
  failForDependency: Array<[string, string]>;
  /** Units to dispatch now, in plan order, at most the free job slots. */
  start: string[];
  /** The earliest moment a deferred unit becomes due, if any is waiting. */
  wakeAt: number | null;
  /** Nothing runs and nothing can start: the batch is over. */
  finished: boolean;
}

const isPending = (status: UnitStatus | undefined): boolean => status === 'queued' || status === 'deferred';

/**
 * What to do next, as a pure function of the batch's state: which pending units fail because a
 * dependency failed, which units start (dependencies done, retry time reached, plan order, up to
 * the free slots), and when to look again for deferred units.
 */
export function decide(view: ScheduleView): ScheduleDecision {
  const failForDependency: Array<[string, string]> = [];
  const start: string[] = [];
  let wakeAt: number | null = null;
  let slots = Math.max(0, view.jobs - view.running);

  for (const unit of view.units) {
    const status = view.status.get(unit.id);
    if (!isPending(status)) continue;
    const failedDep = unit.dependsOn.find((dep) => blocksDependents(view.status.get(dep)));
    if (failedDep !== undefined) {
      failForDependency.push([unit.id, failedDep]);
      continue;
    }
    if (!view.startingAllowed) continue;
    if (!unit.dependsOn.every((dep) => view.status.get(dep) === 'done')) continue;
    const due = status === 'deferred' ? (view.retryAt.get(unit.id) ?? 0) : 0;
    if (due > view.now) {
      wakeAt = wakeAt === null ? due : Math.min(wakeAt, due);
      continue;
    }
    if (slots > 0) {
      start.push(unit.id);
      slots -= 1;
    }
  }
  // Over when nothing runs, nothing starts now, and no deferred unit is waiting for its time
  // (or the batch is stopping, so waiting units stay queued for a later --resume).
  const finished =
    view.running === 0 && start.length === 0 && failForDependency.length === 0 && (!view.startingAllowed || wakeAt === null);
  return { failForDependency, start, wakeAt, finished };
}

/**
 * How many units the driver hands its supervisor beyond the --jobs worker slots: one, which
 * waits there unrecorded and starts the moment a worker exits, so the next worker does not wait
 * for the previous unit's publication and the driver's round trip (README, "Supervision"). None
 * when an outcome may stop the batch from starting units (`--halt`, `--no-quota-wait`: the
 * waiting unit would start before the driver learnt of it), and none while units that another
 * supervisor runs (adopted from an earlier driver) take slots whose end this one cannot see.
 */
export function unitsAhead(view: { halt: boolean; quotaWait: boolean; adoptedRunning: number }): number {
  return !view.halt && view.quotaWait && view.adoptedRunning === 0 ? 1 : 0;
}

/** Exit code of a finished batch: 0, or the number of failed and invalid units capped at 100. */
export function batchExitCode(failed: number): number {
  return Math.min(failed, 100);
}

/**
 * When a quota refusal says the quota comes back: the earliest reset time the block text names
 * (`... (resets 2026-09-11T15:34:00Z).`, read by the quota package), never before now; null
 * when it names none (`resets later`).
 */
export function quotaRetryTime(blockText: string, now: number): number | null {
  const earliest = earliestBlockReset(blockText);
  return earliest === null ? null : Math.max(earliest, now);
}

/**
 * The plan's units in waves by dependency: wave 1 depends on nothing, and each other unit is one
 * wave after its latest dependency. Units keep plan order within a wave. The plan is acyclic
 * (checked when it was loaded).
 */
export function dependencyWaves(units: readonly ScheduleUnit[]): string[][] {
  const byId = new Map(units.map((unit) => [unit.id, unit]));
  const wave = new Map<string, number>();
  const waveOf = (id: string): number => {
    const known = wave.get(id);
    if (known !== undefined) return known;
    const deps = byId.get(id)?.dependsOn ?? [];
    const value = 1 + Math.max(0, ...deps.map(waveOf));
    wave.set(id, value);
    return value;
  };
  const waves: string[][] = [];
  for (const unit of units) {
    const index = waveOf(unit.id) - 1;
    (waves[index] ??= []).push(unit.id);
  }
  return waves;
}
