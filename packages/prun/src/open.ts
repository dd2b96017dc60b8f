// Getting a batch directory ready to drive: a new one laid out whole or not at all, an existing
// one opened under its driver lock with its ledger checked. Everything that can be checked
// before a worker starts is checked here, and a refusal leaves nothing behind.
import { randomBytes } from 'node:crypto';
import {
  realpathSync,
  accessSync,
  existsSync,
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { fsyncPath, isDirectory } from '@prun/kit/fs';
import { batchDirProblem, notABatchDirectory } from '@prun/unit-state/ledger';
import { basename, dirname, join, resolve } from 'node:path';
import { batchPaths, queuedEntry, unitEnv, type BatchPaths } from './batch.js';
import { dispatcherRefusal, type PreflightUnit } from './dispatcher.js';
import { BatchError, EXIT } from './errors.js';
import { appendLedger, readLedger, repairLedgerTail, resolveBatchDir, type LedgerRead } from './ledger.js';
import { LOCK_FILE, drivenBy, liveLockHolder, takeDriverLock } from './lock.js';
import { loadPlan, PlanError, type ResolvedUnit } from './plan.js';
import { isRunning } from './units.js';
import { refuseJobsBeyondOpenFiles } from './supervise/limits.js';

export interface OpenBatch {
  paths: BatchPaths;
  units: ResolvedUnit[];
  ledger: LedgerRead;
  /** The driver lock's descriptor: held until this process exits. */
  lockFd: number;
  /** Where a torn last ledger line was set aside, if there was one. */
  tornSetAside: string | null;
}

const code = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? String(error);

/** Default batch directory: `prun-batch-<UTC timestamp>` in cwd, `-2`, `-3`, ... when taken. */
export function defaultBatchDirName(now: Date, n: number): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return n === 1 ? `prun-batch-${stamp}` : `prun-batch-${stamp}-${n}`;
}

/** What the dispatcher would refuse, and missing clone sources: one line naming the unit. */
function preflightUnits(units: ResolvedUnit[], env: NodeJS.ProcessEnv, paths: BatchPaths): void {
  for (const unit of units) {
    // A clone made on an earlier run is reused; only a clone still to make needs its source.
    if (unit.clone !== null && !existsSync(paths.clone(unit.id))) {
      if (!isDirectory(unit.clone)) throw new BatchError(`unit ${unit.id}: clone source is not a directory: ${unit.clone}`, EXIT.usage);
    }
    const check: PreflightUnit = {
      id: unit.id,
      addDirs: unit.addDirs,
      env: unitEnv(env, unit, unit.clone ? paths.clone(unit.id) : null),
      resultFile: paths.result(unit.id),
    };
    const refusal = dispatcherRefusal(check, paths.dir);
    if (refusal !== null) throw new BatchError(`unit ${unit.id}: the dispatcher would refuse it: ${refusal}`, EXIT.usage);
  }
}

/**
 * Check that `target` can be made a new batch directory, leaving nothing behind: nothing there
 * (or an empty directory), and its nearest existing ancestor a directory we can make one in.
 */
function checkNewDir(target: string, mayBeTaken: boolean): void {
  if (!mayBeTaken) checkTargetFree(target);
  checkAncestorWritable(target);
}

/**
 * Why a new batch cannot take `target`, which exists and is not empty: a batch a live prun is
 * driving (it just won the name, or runs on) is named with its pid and exit 101, as a second
 * `--resume` would be; anything else is a usage error pointing at --resume.
 */
function takenRefusal(target: string): BatchError {
  const holder = liveLockHolder(join(target, LOCK_FILE));
  if (holder !== null) return drivenBy(target, holder);
  return new BatchError(`batch directory already exists and is not empty; use --resume to continue it: ${target}`, EXIT.usage);
}

function checkTargetFree(target: string): void {
  try {
    const stat = lstatSync(target);
    if (!stat.isDirectory()) throw new BatchError(`--dir ${target} exists and is not a directory`, EXIT.usage);
    if (readdirSync(target).length > 0) throw takenRefusal(target);
  } catch (error) {
    if (error instanceof BatchError) throw error;
    const why = code(error);
    if (why !== 'ENOENT' && why !== 'ENOTDIR') throw new BatchError(`--dir ${target}: cannot use it: ${why}`, EXIT.usage);
  }
}

function checkAncestorWritable(target: string): void {
  let ancestor = dirname(target);
  for (;;) {
    try {
      const stat = statSync(ancestor);
      if (!stat.isDirectory()) throw new BatchError(`--dir ${target}: ${ancestor} is not a directory`, EXIT.usage);
      break;
    } catch (error) {
      if (error instanceof BatchError) throw error;
      const why = code(error);
      if (why === 'ENOTDIR') {
        ancestor = dirname(ancestor);
        continue;
      }
      if (why !== 'ENOENT' || ancestor === '/') throw new BatchError(`--dir ${target}: cannot use ${ancestor}: ${why}`, EXIT.usage);
      ancestor = dirname(ancestor);
    }
  }
  try {
    accessSync(ancestor, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new BatchError(`--dir ${target}: cannot create it, ${ancestor} is not writable (${code(error)})`, EXIT.usage);
  }
  // access(2) cannot tell everything (root passes it on /proc): only making a directory proves
  // one can be made. The probe is named as a layout, so one left by a kill is cleaned as one.
  const probe = join(ancestor, `${layoutPrefix(target)}${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(probe);
  } catch (error) {
    throw cannotCreate(target, error);
  }
  rmdirSync(probe);
}

const cannotCreate = (target: string, error: unknown): BatchError =>
  new BatchError(`cannot create the batch directory ${target}: ${code(error)}`, EXIT.usage);

/** mkdir -p one component at a time (a recursive mkdir can spin on /proc); returns the dirs it made. */
function makeParents(dir: string): string[] {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    try {
      statSync(at);
      break;
    } catch {
      missing.unshift(at);
      const up = dirname(at);
      if (up === at) break;
      at = up;
    }
  }
  const made: string[] = [];
  for (const path of missing) {
    mkdirSync(path);
    made.push(path);
  }
  return made;
}

/** The hidden sibling a new batch is laid out in: `.<name>.prun-new-<pid>-<8 hex>`. */
const layoutPrefix = (target: string): string => `.${basename(target)}.prun-new-`;

/**
 * Layouts of `target` left half-made by a prun killed while laying it out: its hidden siblings
 * whose pid is no longer running. Nothing ran from them (the rename into place is the last step).
 */
function abandonedLayouts(target: string): string[] {
  const prefix = layoutPrefix(target);
  let names: string[];
  try {
    names = readdirSync(dirname(target));
  } catch {
    return [];
  }
  return names
    .filter((name) => {
      if (!name.startsWith(prefix)) return false;
      const match = /^([1-9]\d*)-[0-9a-f]{8}$/.exec(name.slice(prefix.length));
      return match !== null && !isRunning(Number(match[1]));
    })
    .map((name) => join(dirname(target), name));
}

/**
 * Lay a batch out in a hidden sibling and rename it into place, holding the driver lock from
 * the first moment: the directory appears whole (plan.json, prompts, one `queued` line per unit)
 * or not at all. Returns false when `target` was taken meanwhile (another batch won the name).
 */
function buildAndPlace(target: string, units: ResolvedUnit[]): { lockFd: number } | false {
  const parent = dirname(target);
  const temp = join(parent, `${layoutPrefix(target)}${process.pid}-${randomBytes(4).toString('hex')}`);
  const paths = batchPaths(temp);
  let lockFd: number | null = null;
  try {
    mkdirSync(temp);
    lockFd = takeDriverLock(paths.lock, target);
    for (const folder of [paths.prompts, paths.results, paths.clones, paths.logs]) mkdirSync(folder);
    const final = batchPaths(target);
    // plan.json is self-contained: prompts copied in, every path absolute, so --resume needs
    // nothing but the batch directory, from any working directory.
    const stored = {
      units: units.map((unit) => ({
        id: unit.id,
        prompt_file: final.prompt(unit.id),
        ...(unit.mode ? { mode: unit.mode } : {}),
        ...(unit.addDirs.length > 0 ? { add_dirs: unit.addDirs } : {}),
        ...(unit.clone ? { clone: unit.clone } : {}),
        ...(unit.model ? { model: unit.model } : {}),
        ...(unit.dependsOn.length > 0 ? { depends_on: unit.dependsOn } : {}),
        ...(unit.timeoutSeconds !== null ? { timeout: unit.timeoutSeconds } : {}),
      })),
    };
    for (const unit of units) writeFileSync(paths.prompt(unit.id), unit.prompt, { flag: 'wx' });
    writeFileSync(paths.plan, `${JSON.stringify(stored, null, 2)}\n`, { flag: 'wx' });
    fsyncPath(paths.plan);
    // One write and one fsync for every unit's `queued` line: nothing can see the ledger before
    // the rename below, and fsyncPath(temp) follows.
    appendLedger(paths.ledger, units.map((unit) => queuedEntry(final, unit)));
    fsyncPath(temp);
    try {
      renameSync(temp, target);
    } catch (error) {
      const why = code(error);
      if (why === 'ENOTEMPTY' || why === 'EEXIST') {
        rmSync(temp, { recursive: true, force: true });
        closeSync(lockFd);
        return false;
      }
      throw error;
    }
    fsyncPath(parent);
    return { lockFd };
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    if (lockFd !== null) closeSync(lockFd);
    if (error instanceof BatchError) throw error;
    throw cannotCreate(target, error);
  }
}

/**
 * Everything a new batch checks before it creates anything (the plan, its prompts, ids and
 * dependencies, the dispatcher's settings for every unit, the directory), creating nothing:
 * `createBatch` runs it first, and `prun batch --dry-run` runs only it. Returns the resolved
 * units and the directory the batch would get (the default name as of `now`).
 */
export function checkNewBatch(
  planPath: string,
  dir: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
  now: Date,
): { units: ResolvedUnit[]; target: string } {
  // An empty --dir would resolve to the working directory itself: refused, never guessed.
  if (dir !== undefined && dir.trim() === '') throw new BatchError('--dir must not be empty', EXIT.usage);
  const { units } = loadPlan(resolve(cwd, planPath));
  const target = dir === undefined ? join(cwd, defaultBatchDirName(now, 1)) : resolve(cwd, dir);
  checkNewDir(target, dir === undefined);
  preflightUnits(units, env, batchPaths(target));
  return { units, target };
}

/**
 * A new batch from a plan: plan, prompts, dispatcher settings and ids, and the directory all
 * checked before anything is created; then laid out atomically under the driver lock.
 * `dir` undefined picks the default name in `cwd`, unique even for batches started together.
 */
export async function createBatch(
  planPath: string,
  dir: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
  options: { jobs?: number } = {},
): Promise<OpenBatch> {
  const now = new Date();
  const { units, target: firstTarget } = checkNewBatch(planPath, dir, env, cwd, now);
  // Before the directory exists: a refused --jobs leaves nothing to clear away.
  if (options.jobs !== undefined) refuseJobsBeyondOpenFiles(options.jobs, units.length);
  let made: string[] = [];
  try {
    made = makeParents(dirname(firstTarget));
  } catch (error) {
    throw new BatchError(`--dir ${firstTarget}: cannot create its parent: ${code(error)}`, EXIT.usage);
  }
  if (dir !== undefined) for (const left of abandonedLayouts(firstTarget)) rmSync(left, { recursive: true, force: true });
  for (let n = 1; n <= 1000; n += 1) {
    const target = dir === undefined ? join(cwd, defaultBatchDirName(now, n)) : firstTarget;
    if (dir === undefined && n > 1) {
      try {
        lstatSync(target);
        continue;
      } catch {
        // free
      }
    }
    let placed: { lockFd: number } | false;
    try {
      placed = buildAndPlace(target, units);
    } catch (error) {
      for (const path of made.reverse()) rmSync(path, { recursive: true, force: true });
      throw error;
    }
    if (placed) {
      const paths = batchPaths(target);
      return { paths, units: loadPlan(paths.plan).units, ledger: readLedger(paths.ledger), lockFd: placed.lockFd, tornSetAside: null };
    }
    if (dir !== undefined) throw takenRefusal(target);
  }
  throw new BatchError(`no free default batch directory name in ${cwd}; pass --dir`, EXIT.usage);
}

function isWritableDir(path: string): string | null {
  try {
    if (!statSync(path).isDirectory()) return 'not a directory';
    accessSync(path, constants.W_OK | constants.X_OK);
    return null;
  } catch (error) {
    return code(error);
  }
}

/** Whether a batch has anything a ledger would have had to describe: results, logs or clones. */
function hasRunState(paths: BatchPaths): boolean {
  for (const folder of [paths.results, paths.logs, paths.clones]) {
    try {
      if (readdirSync(folder).length > 0) return true;
    } catch {
      // missing folder: nothing there
    }
  }
  return false;
}

/** How a ledger without one entry looks: missing, empty, or holding only a torn line. */
function ledgerEmptiness(ledger: LedgerRead): string {
  if (!ledger.exists) return 'is missing';
  if (ledger.tornTail !== null) return `holds only a torn line (${ledger.tornTail.bytes.length} bytes, no whole entry)`;
  return 'is empty';
}

/**
 * The batch directory a copied or moved batch was made in, or null when its ledger's result
 * paths (absolute, as every stored path is) lie in this directory. Driving a copy would read
 * and write the original's files.
 */
function movedFrom(paths: BatchPaths, ledger: LedgerRead): string | null {
  const here = realPath(paths.results);
  for (const entry of ledger.entries) {
    const results = dirname(entry.result_file);
    // The same folder by another name (a symlink on the way) is not a move.
    if (results !== paths.results && realPath(results) !== here) return dirname(results);
  }
  return null;
}

const realPath = (path: string): string | null => {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
};

/**
 * A ledger with a bad line before the last stops whatever would act on the batch (exit 102,
 * nothing changed): its units' states cannot be trusted.
 */
export function refuseDamagedLedger(paths: BatchPaths, ledger: LedgerRead): void {
  if (ledger.badLines.length === 0) return;
  const lines = ledger.badLines.join(', ');
  throw new BatchError(
    `ledger line${ledger.badLines.length > 1 ? 's' : ''} ${lines} of ${paths.ledger} ${ledger.badLines.length > 1 ? 'are' : 'is'} not a valid entry; nothing was changed (repair or remove the line to resume)`,
    EXIT.ledger,
  );
}

/**
 * An existing batch directory, ready to drive: the driver lock taken (another driver refused,
 * exit 101), its folders writable, its plan loaded, its ledger whole (a bad line before the
 * last, or a missing or empty ledger beside results or logs, stops here with exit 102 and
 * nothing changed), the dispatcher's checks passed; then a torn last line is set aside.
 */
export async function openBatch(dir: string, env: NodeJS.ProcessEnv, cwd: string, options: { preflight?: boolean } = {}): Promise<OpenBatch> {
  const paths = batchPaths(resolveBatchDir(dir, cwd));
  // Judged as every other command judges it (unit-state's batchDirProblem); the ledger by the rules below.
  const problem = batchDirProblem(paths.dir, { ledger: false });
  if (problem !== null) {
    const left = problem === 'no such directory' ? abandonedLayouts(paths.dir) : [];
    const hint = left.length === 0 ? '' : `; a prun killed while creating it left ${basename(left[0]!)} beside it, from which nothing ran: start the batch again with prun batch PLAN --dir ${dir}`;
    throw new BatchError(`${notABatchDirectory(paths.dir, problem)}${hint}`, EXIT.usage);
  }
  const unwritable = isWritableDir(paths.dir);
  if (unwritable !== null) throw new BatchError(`cannot write in the batch directory ${paths.dir} (${unwritable})`, EXIT.usage);
  const lockFd = takeDriverLock(paths.lock, paths.dir);
  try {
    for (const folder of [paths.prompts, paths.results, paths.logs, paths.clones]) {
      const problem = isWritableDir(folder);
      if (problem !== null) throw new BatchError(`cannot write in ${folder} (${problem})`, EXIT.usage);
    }
    try {
      accessSync(paths.ledger, constants.W_OK);
    } catch (error) {
      if (code(error) !== 'ENOENT') throw new BatchError(`cannot write to the ledger ${paths.ledger} (${code(error)})`, EXIT.usage);
    }
    let units: ResolvedUnit[];
    try {
      units = loadPlan(paths.plan).units;
    } catch (error) {
      if (error instanceof PlanError) throw new BatchError(`${paths.plan}: ${error.message}`, EXIT.usage);
      throw error;
    }
    const ledger = readLedger(paths.ledger);
    refuseDamagedLedger(paths, ledger);
    if (ledger.entries.length === 0 && hasRunState(paths)) {
      throw new BatchError(
        `the ledger ${paths.ledger} ${ledgerEmptiness(ledger)} but the batch has results or logs; nothing was changed (restore the ledger, or start a new batch)`,
        EXIT.ledger,
      );
    }
    const moved = movedFrom(paths, ledger);
    if (moved !== null) {
      throw new BatchError(
        `${paths.dir} was copied or moved from ${moved}: its ledger names files there, not here; nothing was changed (resume ${moved} itself, or start a new batch from ${join(paths.dir, 'plan.json')})`,
        EXIT.usage,
      );
    }
    // `prun cancel` starts nothing, so the dispatcher's checks are not its business.
    const settled = new Set(['done', 'cancelled']);
    const pending = units.filter((unit) => !settled.has(ledger.latest.get(unit.id)?.status ?? ''));
    if (options.preflight !== false) preflightUnits(pending, env, paths);
    const tornSetAside = repairLedgerTail(paths.ledger, ledger);
    return { paths, units, ledger, lockFd, tornSetAside };
  } catch (error) {
    closeSync(lockFd);
    throw error;
  }
}
