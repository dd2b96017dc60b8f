// Watching a batch from outside its driver (`prun wait`, `prun status --watch`, `prun log
// --follow`): read-only, lock-free, woken by file-system events on the batch directory with a slow
// poll behind them (a driver killed with SIGKILL changes no file).
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readHead, writeFileAtomic } from '@prun/kit/fs';
import { Waker } from '@prun/monitor';
import { z } from 'zod';
import type { BatchPaths } from '../paths.js';
import { countsAgainstBatch } from '../outcome.js';
import type { UnitStatus } from '../ledger.js';
import { batchExitCode } from '../schedule.js';

/** The driver's last word: the `--json` outcome document and the pid that wrote it. */
export const SUMMARY_FILE = 'summary.json';

/** How often a watcher looks without an event: how long a SIGKILLed driver can go unnoticed. */
export const POLL_MS = 2000;

export const summaryPath = (paths: BatchPaths): string => join(paths.dir, SUMMARY_FILE);

const SummarySchema = z.looseObject({ exit_code: z.number().int(), driver_pid: z.number().int().positive() });

export interface Summary {
  exit_code: number;
  driver_pid: number;
  /** The document as `prun batch --json` printed it (without the writer's pid), fields in their order. */
  document: Record<string, unknown>;
}

/** The summary a driver left, or null (none, unreadable, or not one: a watcher never fails on it). */
export function readSummary(paths: BatchPaths): Summary | null {
  const head = readHead(summaryPath(paths), { maxBytes: 64 * 1024 * 1024, overflow: 'refuse' });
  if (!head.ok) return null;
  try {
    const raw: unknown = JSON.parse(head.text);
    const parsed = SummarySchema.safeParse(raw);
    if (!parsed.success) return null;
    const { driver_pid: _pid, ...document } = raw as Record<string, unknown>;
    return { exit_code: parsed.data.exit_code, driver_pid: parsed.data.driver_pid, document };
  } catch {
    return null;
  }
}

/**
 * Written by the driver as its last act, so `prun wait` learns its exit code. A failure to write
 * it must not turn a finished batch into an error: it is returned as a message instead.
 */
export function writeSummary(paths: BatchPaths, document: Record<string, unknown>): string | null {
  try {
    writeFileAtomic(summaryPath(paths), `${JSON.stringify({ ...document, driver_pid: process.pid })}\n`, { tag: 'prun' });
    return null;
  } catch (error) {
    return `could not write ${summaryPath(paths)} (prun wait reads the batch's end from it): ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

/** Removed by a driver as it starts: an earlier run's word is not this run's. */
export function removeSummary(paths: BatchPaths): string | null {
  try {
    rmSync(summaryPath(paths), { force: true });
    return null;
  } catch (error) {
    return `could not remove an earlier run's ${summaryPath(paths)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

export type BatchEnd =
  | { kind: 'running' }
  /** The driver ended and said how (its summary), or every unit settled. */
  | { kind: 'finished'; exitCode: number; summary: Summary | null }
  /** Nobody drives it, nothing runs its units, and it is not finished: its driver was killed (or an old prun left no summary). */
  | { kind: 'abandoned' };

/** A unit in one of these has not settled (any other status, a newer one such as cancelled too, has). */
const UNSETTLED = new Set<string>(['queued', 'running', 'deferred', 'interrupted', 'unknown']);

/**
 * How long a batch must look abandoned before a watcher says so: `prun batch --resume D & prun
 * wait D` starts the watcher before the new driver has taken the lock.
 */
export const ABANDON_GRACE_MS = 5000;

/**
 * Whether a batch has ended: the one rule of `prun wait` and `prun status --watch`, from who
 * holds its lock, the summary its driver wrote, its units' states, whether any unit's dispatch
 * still runs (a supervisor outlives a driver killed with SIGKILL and finishes its units), and
 * how long it has looked driverless with nothing running (`unattendedMs`). A summary counts when
 * no driver runs or when its writer is the driver still holding the lock (it writes the summary
 * last, just before it exits). Abandoned only after ABANDON_GRACE_MS of that.
 */
export function batchEnd(input: {
  driverPid: number | null;
  summary: Summary | null;
  statuses: ReadonlyArray<UnitStatus | 'unknown'>;
  dispatchAlive: boolean;
  unattendedMs: number;
}): BatchEnd {
  const { driverPid, summary, statuses } = input;
  if (summary !== null && (driverPid === null || driverPid === summary.driver_pid)) return { kind: 'finished', exitCode: summary.exit_code, summary };
  if (driverPid !== null) return { kind: 'running' };
  if (statuses.every((status) => !UNSETTLED.has(status))) {
    return { kind: 'finished', exitCode: batchExitCode(statuses.filter((status) => status !== 'unknown' && countsAgainstBatch(status)).length), summary: null };
  }
  if (input.dispatchAlive || input.unattendedMs < ABANDON_GRACE_MS) return { kind: 'running' };
  return { kind: 'abandoned' };
}

/**
 * Call `look` now and again on every change to the batch directory's ledger, summary or lock
 * (and the extra `files`), and at least every `pollMs`, until it returns true. Never a busy loop:
 * between looks the process waits on inotify and one timer.
 */
export function watchBatch(paths: BatchPaths, look: () => boolean, options: { files?: () => readonly string[]; pollMs?: number } = {}): Promise<void> {
  const pollMs = options.pollMs ?? POLL_MS;
  return new Promise((resolveWatch, rejectWatch) => {
    const waker = new Waker(tick, { coalesceMs: 50 });
    function tick(): void {
      let ended: boolean;
      try {
        ended = look();
      } catch (error) {
        waker.close();
        rejectWatch(error);
        return;
      }
      if (ended) {
        waker.close();
        resolveWatch();
        return;
      }
      let fresh = false;
      for (const file of [paths.ledger, summaryPath(paths), paths.lock, paths.plan, ...(options.files?.() ?? [])]) fresh = waker.watchFile(file) || fresh;
      // A watcher set up just now missed what happened before it: look again soon.
      if (fresh) waker.soon();
      waker.wakeAt(Date.now() + pollMs);
    }
    tick();
  });
}

/**
 * Wait up to `graceMs` for `paths.plan` to appear (a `prun batch ... &` started just before); the
 * caller then judges the directory (refuseNonBatchDir), so this says nothing of what it found.
 */
export async function awaitBatchDir(paths: BatchPaths, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  await watchBatch(paths, () => existsSync(paths.plan) || Date.now() >= deadline, { pollMs: Math.min(POLL_MS, graceMs) });
}
