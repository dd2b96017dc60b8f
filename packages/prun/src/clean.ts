// `prun clean DIR [--dry-run] [--snapshot] [--clones] [--json]`: remove the state directories
// (and with --clones the throwaway clones) of a batch's settled units, and nothing else. Unlike
// report-state, a batch knows its units' process identity, so a state dir goes only when the
// ledger says its unit settled, its result file is there, and its dispatcher is proven gone (the
// same recorded pid + start time, or command-line search, that --resume adopts by). The batch's
// driver lock is held for the whole run, so no driver can start a unit meanwhile.
import { closeSync, constants, lstatSync, openSync, readdirSync, rmSync, type Stats } from 'node:fs';
import { basename, isAbsolute, join, normalize } from 'node:path';
import { CliError } from '@prun/kit/cli';
import { groupThousands } from '@prun/report-state';
import { STATE_FILES, isStateDirNameOf, readResultPathEntry } from '@prun/unit-state';
import { tryFlock } from '@prun/kit/fs';
import { batchPaths, refuseNonBatchDir, type BatchPaths } from './paths.js';
import { BatchError, EXIT } from './errors.js';
import { readLedger, resolveBatchDir, type LedgerEntry, type LedgerRead, type UnitStatus } from './ledger.js';
import { drivenBy, liveLockHolder, takeDriverLock } from './lock.js';
import { hostedDispatchAlive } from './supervise/alive.js';
import { findDispatcherFor, isDispatcherFor, readResultHead, samePlace } from './units.js';

/** The statuses after which a unit's dispatcher has nothing more to do: only these are cleaned. */
export const SETTLED_STATUSES: readonly UnitStatus[] = ['done', 'failed', 'invalid', 'cancelled'];

export interface CleanOptions {
  dryRun: boolean;
  snapshot: boolean;
  clones: boolean;
  json: boolean;
}

export type TargetKind = 'state-dir' | 'clone';

/** Something clean removes (or, with --dry-run, would remove). */
export interface Removal {
  id: string;
  kind: TargetKind;
  path: string;
  /** Apparent size of the files in it (symlinks counted as links, never followed). */
  bytes: number;
  /** With --snapshot: where the tail's archive was published (null: no tail to archive). */
  snapshot?: string | null;
}

/** Something recorded that clean leaves alone, and why. */
export interface Kept {
  id: string;
  kind: TargetKind;
  path: string;
  reason: string;
}

/** What a unit's facts say: null when its recorded dirs may go, else why they stay. */
export function unitRefusal(facts: { status: UnitStatus; resultPresent: boolean; dispatcherAlive: () => boolean }): string | null {
  if (!SETTLED_STATUSES.includes(facts.status)) return `the unit is ${facts.status}, not settled`;
  if (!facts.resultPresent) return 'the unit has no result file';
  // Asked last: the process search is the expensive check.
  if (facts.dispatcherAlive()) return "the unit's dispatcher is still running";
  return null;
}

/** How one recorded path looks on disk, without following a symlink. */
export type PathFact = { kind: 'directory'; stats: Stats } | { kind: 'symlink' } | { kind: 'other' } | { kind: 'gone' } | { kind: 'error'; code: string };

export function pathFact(path: string): PathFact {
  let stats: Stats | undefined;
  try {
    stats = lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    return { kind: 'error', code: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
  if (stats === undefined) return { kind: 'gone' };
  if (stats.isSymbolicLink()) return { kind: 'symlink' };
  return stats.isDirectory() ? { kind: 'directory', stats } : { kind: 'other' };
}

/**
 * Whether a recorded state dir is provably this unit's of this batch: an absolute path named by
 * the state-dir rule for this unit id, a real directory (a symlink is never followed), whose own
 * `result-file` names this batch's result path. Returns null, 'gone', or the reason to keep it.
 */
export function stateDirRefusal(stateDir: string, id: string, resultPath: string, fact: PathFact): string | 'gone' | null {
  if (!isAbsolute(stateDir) || normalize(stateDir) !== stateDir) return 'the recorded path is not a plain absolute path';
  if (!isStateDirNameOf(basename(stateDir), id)) return `the recorded path is not named as a state dir of unit ${id}`;
  const looks = refusalOfFact(fact);
  if (looks !== null) return looks;
  const named = readResultPathEntry(stateDir);
  if (named === null) return 'it has no result-file entry, so it is not provably this batch\'s';
  if (!samePlace(named, resultPath)) return `its result-file names ${named}, not this batch's result`;
  return null;
}

function refusalOfFact(fact: PathFact): string | 'gone' | null {
  switch (fact.kind) {
    case 'directory':
      return null;
    case 'gone':
      return 'gone';
    case 'symlink':
      return 'it is a symlink (never followed)';
    case 'other':
      return 'it is not a directory';
    case 'error':
      return `it cannot be examined (${fact.code})`;
  }
}

/** The apparent size of a tree, by lstat: a symlink counts as itself and is never followed. */
export function treeBytes(path: string): number {
  const stats = lstatSync(path, { throwIfNoEntry: false });
  if (stats === undefined) return 0;
  if (!stats.isDirectory()) return stats.size;
  let total = 0;
  for (const name of readdirSync(path)) total += treeBytes(join(path, name));
  return total;
}

/**
 * Whether any dispatcher of this unit still runs: one hosted by a supervisor its lines name, or
 * (a prun before supervisors) a dispatcher process of its own, the recorded ones by pid and
 * start time, then any found by its result path.
 */
function dispatcherAlive(batchDir: string, entries: readonly LedgerEntry[], resultPath: string): boolean {
  if (hostedDispatchAlive(batchDir, entries)) return true;
  for (const entry of entries) {
    if (entry.supervised !== true && entry.dispatcher_pid !== undefined && isDispatcherFor(entry.dispatcher_pid, resultPath, entry.dispatcher_start ?? null)) return true;
  }
  return findDispatcherFor(resultPath) !== null;
}

export interface CleanPlan {
  dir: string;
  remove: Removal[];
  kept: Kept[];
}

/** Decide, unit by unit in ledger order, what goes and what stays. Removes nothing. */
export function planClean(paths: BatchPaths, entries: readonly LedgerEntry[], options: Pick<CleanOptions, 'clones'>): CleanPlan {
  const byId = new Map<string, LedgerEntry[]>();
  for (const entry of entries) {
    const list = byId.get(entry.id) ?? [];
    list.push(entry);
    byId.set(entry.id, list);
  }
  const remove: Removal[] = [];
  const kept: Kept[] = [];
  for (const [id, list] of byId) {
    const latest = list.at(-1)!;
    const resultPath = paths.result(id);
    const targets: Array<{ kind: TargetKind; path: string }> = [];
    for (const stateDir of new Set(list.map((entry) => entry.state_dir).filter((dir): dir is string => dir !== null))) {
      targets.push({ kind: 'state-dir', path: stateDir });
    }
    if (options.clones) {
      for (const clone of new Set(list.map((entry) => entry.clone_dir).filter((dir): dir is string => dir !== null))) {
        targets.push({ kind: 'clone', path: clone });
      }
    }
    if (targets.length === 0) continue;
    const refusal = unitRefusal({
      status: latest.status,
      resultPresent: readResultHead(resultPath) !== null,
      dispatcherAlive: () => dispatcherAlive(paths.dir, list, resultPath),
    });
    for (const target of targets) {
      const fact = pathFact(target.path);
      const why =
        refusal ??
        (target.kind === 'state-dir'
          ? stateDirRefusal(target.path, id, resultPath, fact)
          : // Only the clone the batch itself made (`<batch>/clones/<id>`): a clone_dir elsewhere is not its to remove.
            target.path !== paths.clone(id)
            ? `it is not this batch's own clone (${paths.clone(id)})`
            : refusalOfFact(fact));
      if (why === 'gone') continue;
      if (why !== null) {
        kept.push({ id, kind: target.kind, path: target.path, reason: why });
        continue;
      }
      try {
        remove.push({ id, kind: target.kind, path: target.path, bytes: treeBytes(target.path) });
      } catch (error) {
        // A folder inside it cannot be listed: rm would fail there too, so it is kept whole.
        kept.push({ id, kind: target.kind, path: target.path, reason: `it cannot be measured (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
      }
    }
  }
  return { dir: paths.dir, remove, kept };
}

/** A dry run takes no lock (it writes nothing) but says what a real run would meet: a live driver. */
function refuseIfDriven(paths: BatchPaths): void {
  let fd: number;
  try {
    fd = openSync(paths.lock, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return; // no lock file: no driver has ever run here
  }
  try {
    if (tryFlock(fd, 'exclusive') === 'busy') throw drivenBy(paths.dir, liveLockHolder(paths.lock));
  } finally {
    closeSync(fd);
  }
}

export interface CleanResult extends CleanPlan {
  /** What could not be archived or removed (then kept), one line each. */
  failures: string[];
}

/** Carry out a plan: archive each state dir's tail first with --snapshot, then remove. */
export async function carryOut(plan: CleanPlan, options: CleanOptions, env: NodeJS.ProcessEnv, cwd: string): Promise<CleanResult> {
  const removed: Removal[] = [];
  const kept = [...plan.kept];
  const failures: string[] = [];
  for (const target of plan.remove) {
    if (options.snapshot && target.kind === 'state-dir') {
      const archived = await archiveTail(target.path, env, cwd);
      if ('failure' in archived) {
        failures.push(`${target.id}: ${target.path} kept: ${archived.failure}`);
        kept.push({ id: target.id, kind: target.kind, path: target.path, reason: archived.failure });
        continue;
      }
      target.snapshot = archived.published;
    }
    try {
      // rm walks by lstat: a symlink inside is unlinked, never followed.
      rmSync(target.path, { recursive: true, force: false });
      removed.push(target);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      failures.push(`${target.id}: could not remove ${target.path} (${code})`);
      kept.push({ id: target.id, kind: target.kind, path: target.path, reason: `removal failed (${code})` });
    }
  }
  return { dir: plan.dir, remove: removed, kept, failures };
}

/** Archive a state dir's tail with the snapshot-tail library; no tail, nothing to archive. */
async function archiveTail(stateDir: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ published: string | null } | { failure: string }> {
  const tail = pathFact(join(stateDir, STATE_FILES.tail));
  if (tail.kind === 'gone') return { published: null };
  if (tail.kind === 'symlink') return { failure: 'its tail is a symlink (never followed), so it was not archived' };
  const { snapshotTail, parseEnv, SnapshotError } = await import('@prun/snapshot-tail');
  try {
    // prun clean has no --dest: a refused default location is moved by XDG_STATE_HOME only.
    const outcome = await snapshotTail({ unit: stateDir, env: parseEnv(env), cwd, destinationLever: 'environment' });
    return { published: outcome.published };
  } catch (error) {
    if (error instanceof SnapshotError || error instanceof CliError) return { failure: `snapshot failed: ${error.message}` };
    throw error;
  }
}

const KIND_TEXT: Record<TargetKind, string> = { 'state-dir': 'state dir', clone: 'clone' };

export function renderClean(result: CleanResult, dryRun: boolean): string {
  const lines: string[] = [];
  const verb = dryRun ? 'would remove' : 'removed';
  for (const item of result.remove) {
    lines.push(`${verb} ${item.id} ${KIND_TEXT[item.kind]} ${item.path} (${groupThousands(item.bytes)} bytes)`);
    if (item.snapshot) lines.push(`  tail archived at ${item.snapshot}`);
  }
  for (const item of result.kept) lines.push(`kept ${item.id} ${KIND_TEXT[item.kind]} ${item.path}: ${item.reason}`);
  const bytes = result.remove.reduce((sum, item) => sum + item.bytes, 0);
  const count = (kind: TargetKind): number => result.remove.filter((item) => item.kind === kind).length;
  lines.push(
    `clean ${result.dir}: ${verb} ${count('state-dir')} state dirs and ${count('clone')} clones, ${groupThousands(bytes)} bytes; kept ${result.kept.length}`,
  );
  return lines.map((line) => `${line}\n`).join('');
}

export function cleanJson(result: CleanResult, dryRun: boolean): string {
  return `${JSON.stringify({
    dir: result.dir,
    dry_run: dryRun,
    bytes: result.remove.reduce((sum, item) => sum + item.bytes, 0),
    removed: result.remove.map((item) => ({ id: item.id, kind: item.kind, path: item.path, bytes: item.bytes, ...(item.snapshot === undefined ? {} : { snapshot: item.snapshot }) })),
    kept: result.kept,
  })}\n`;
}

/** The ledger clean acts on; a damaged line stops it (102, nothing removed). */
function readCleanLedger(paths: BatchPaths): LedgerRead {
  const ledger = readLedger(paths.ledger);
  if (ledger.badLines.length > 0) {
    throw new BatchError(`ledger lines ${ledger.badLines.join(', ')} of ${paths.ledger} are not valid entries; nothing was removed`, EXIT.ledger);
  }
  return ledger;
}

/**
 * The command. Refuses (nothing removed) a directory that is not a batch (2), a batch a live
 * driver holds (101), a ledger with a damaged line (102). Exit 1 when something could not be
 * archived or removed (it is kept and named on stderr).
 */
export async function runClean(dirArg: string, options: CleanOptions, env: NodeJS.ProcessEnv, cwd: string, warn: (line: string) => void): Promise<number> {
  const paths = batchPaths(resolveBatchDir(dirArg, cwd));
  refuseNonBatchDir(paths.dir, { ledger: true });
  // A ledger that would be refused is refused before the lock, so a refusal creates nothing
  // (not even driver.lock); it is read again under the lock, where it cannot change meanwhile.
  readCleanLedger(paths);
  let lock: number | null = null;
  if (options.dryRun) refuseIfDriven(paths);
  else lock = takeDriverLock(paths.lock, paths.dir);
  try {
    const ledger = readCleanLedger(paths);
    const plan = planClean(paths, ledger.entries, options);
    const result = options.dryRun ? { ...plan, failures: [] } : await carryOut(plan, options, env, cwd);
    for (const failure of result.failures) warn(failure);
    process.stdout.write(options.json ? cleanJson(result, options.dryRun) : renderClean(result, options.dryRun));
    return result.failures.length > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    if (lock !== null) closeSync(lock);
  }
}
