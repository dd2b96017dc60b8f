import { accessSync, constants, readdirSync, statSync, type Dirent } from 'node:fs';
import { readHead, readHeadShared, readHeadText } from '@prun/kit/fs';
import { PY_WHITESPACE_CODE_POINTS, compareCodePoints, pyExceptionName } from '@prun/kit/py';
import { resolve } from 'node:path';
import { MAX_ENTRY_BYTES, STATE_FILES, isStateDirName } from '@prun/unit-state';
import {
  classifyTarget,
  entryPathText,
  failedClassification,
  legacyPidOf,
  resolveEntry,
  tailBytesOf,
  type EntryText,
  type ResultOutcome,
  type ResultTarget,
  type StatFact,
} from './classify.js';
import { childPath, childPrefix, decodeSurrogateEscape, encodeSurrogateEscape, entryPath, hasSurrogate, isUtf8, type FsPath, type ObservedPath } from './names.js';
import { buildRecord, type DiscoveryError, type UnitObservation, type UnitRecord } from './report.js';

export interface FileFacts {
  isFile(): boolean;
  isDirectory(): boolean;
  size: number;
}

/**
 * Every file system call a sweep makes. All of them only look: list, stat (following
 * symlinks) and read one small entry. Tests inject failures through this seam.
 */
export interface ObservationFs {
  /**
   * Entry names of a directory: strings when every name is UTF-8, raw bytes (Buffers) when
   * some name is not, so no byte is lost. Throws like node:fs.
   */
  readdir(dir: FsPath): Array<string | Buffer>;
  /**
   * Optional: the names with what the listing already says of each (`directory` true for a real
   * directory, false for a file, FIFO, socket or device, null for a symlink, which only a stat
   * can resolve). When present, discovery stats only the symlinks: a stat following symlinks
   * says exactly what the listing says for everything else. Throws like node:fs.
   */
  listDir?(dir: FsPath): Array<{ name: string | Buffer; directory: boolean | null }>;
  /**
   * stat following symlinks; undefined when nothing is there (ENOENT), as with node:fs's
   * `throwIfNoEntry: false`. Other failures throw like node:fs (an ENOENT throw counts too).
   */
  stat(path: FsPath): FileFacts | undefined;
  /**
   * One state entry of a unit (at most 64 KiB, regular files only, never blocks): its text, as
   * `@prun/unit-state`'s readStateEntry reads it (whose answer, bytes and all, is one).
   */
  readEntry(unitDir: FsPath, name: string): EntryText;
}

/**
 * The Python exception class name of a failure, as schema v1 and the original write it
 * (`FileNotFoundError`, `PermissionError`, `NotADirectoryError`, `ValueError`, ...): mapped from
 * the Node error code by @prun/kit/py, else the error's own class name.
 */
export function errorName(error: unknown): string {
  return pyExceptionName(error);
}

/** An operating-system failure (it has an errno), as opposed to a bug or a bad argument. */
function isSystemError(error: unknown): boolean {
  return typeof (error as { errno?: unknown } | null)?.errno === 'number';
}

// The options of the two calls a sweep makes per unit, made once (10,000 units, 30,000 calls).
const ENTRY_READ = { maxBytes: MAX_ENTRY_BYTES, overflow: 'refuse' } as const;
const NO_THROW = { throwIfNoEntry: false } as const;

export const nodeObservationFs: ObservationFs = {
  // Decoding 10,000 Buffers costs more than listing twice: list as text, and only when a name
  // did not decode (U+FFFD) list again as bytes.
  readdir: (dir) => {
    const names = readdirSync(dir);
    return names.some((name) => name.includes('\ufffd')) ? readdirSync(dir, { encoding: 'buffer' }) : names;
  },
  // The kernel's d_type (Node stats an entry whose type the file system does not report): one
  // stat and one Stats object fewer per unit than stating every entry. Where a stat of a listed
  // entry could still fail (a root that can be read but not searched, a path near PATH_MAX),
  // every entry is stated as before, so the failure is a `unit-entry` error as in the original.
  listDir: (dir) => {
    let entries: Array<Dirent | Dirent<Buffer>> = readdirSync(dir, { withFileTypes: true });
    if (entries.some((entry) => (entry.name as string).includes('\ufffd'))) entries = readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
    const trusted = isSearchable(dir);
    return entries.map((entry) => ({ name: entry.name, directory: trusted && !entry.isSymbolicLink() ? entry.isDirectory() : null }));
  },
  // A missing file is common (no result yet, no tail): no Error, no stack trace for it.
  stat: (path) => statSync(path, NO_THROW),
  // readStateEntry's read (regular files only, at most MAX_ENTRY_BYTES, else EntryTooLarge) as
  // text only: nothing here needs the bytes, and copying them costs a sweep a few microseconds a
  // unit. A plain `dir/name` for the usual string path (path.join's normalizing is not needed for
  // a name from STATE_FILES under a listed unit); a Buffer path reaches a unit whose name is not
  // valid UTF-8.
  readEntry: (unitDir, name) => {
    const path = typeof unitDir === 'string' ? `${unitDir}/${name}` : Buffer.concat([unitDir, Buffer.from(`/${name}`)]);
    const read = readHeadText(path, ENTRY_READ);
    // Text with U+FFFD may hide bytes that are not UTF-8, which a result entry keeps (entryPathText):
    // that rare entry is read again with its bytes, and that one read answers.
    if (!read.ok || !read.text.includes('\ufffd')) return read;
    const again = readHead(path, ENTRY_READ);
    return again.ok ? { ok: true, text: again.text, bytes: again.bytes } : again;
  },
};

/** PATH_MAX less NAME_MAX: below this, no listed name can make a path too long to stat. */
const SHORT_ROOT_BYTES = 4096 - 256;

/** Whether a listed directory can be searched, so a stat of an entry in it cannot be refused. */
function isSearchable(dir: FsPath): boolean {
  if (Buffer.byteLength(dir) >= SHORT_ROOT_BYTES) return false;
  try {
    accessSync(dir, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The error a throwing stat would have given for a missing entry (named by `errorName`). */
function noEntry(): NodeJS.ErrnoException {
  return Object.assign(new Error('no such file or directory'), { code: 'ENOENT', errno: -2 });
}

// The facts without a payload, made once: a sweep states two paths a unit.
const ABSENT: StatFact = Object.freeze({ kind: 'absent' });
const NOT_REGULAR: StatFact = Object.freeze({ kind: 'not-regular' });

/** What a stat that answered (undefined: nothing there) says, as a fact. */
function factOf(facts: FileFacts | undefined): StatFact {
  if (facts === undefined) return ABSENT;
  return facts.isFile() ? { kind: 'regular', size: facts.size } : NOT_REGULAR;
}

/** stat as a fact; a non-system failure (such as a NUL in the path) is rethrown. */
function statFact(fs: ObservationFs, path: FsPath): StatFact {
  let facts: FileFacts | undefined;
  try {
    facts = fs.stat(path);
  } catch (error) {
    if (!isSystemError(error)) throw error;
    if ((error as { code?: unknown }).code === 'ENOENT') return ABSENT;
    return { kind: 'error', code: errorName(error) };
  }
  return factOf(facts);
}

/** A listed name that may be a unit: its text, what the listing says of it, its bytes when listed as bytes. */
interface Candidate {
  name: string;
  directory: boolean | null;
  raw?: Buffer;
}

export interface Discovery {
  units: ObservedPath[];
  errors: DiscoveryError[];
}

/**
 * The unit directories under each root, roots in the given order, names sorted, each unit
 * once even when roots repeat. A root that cannot be listed, or a matching entry that cannot
 * be stated, is an error, never an empty result. Non-directories are skipped. With `only`
 * (`--batch`), a unit whose path is not in it is passed over before it is stated.
 */
export function discoverUnits(
  roots: readonly string[],
  fs: ObservationFs = nodeObservationFs,
  only: ReadonlySet<string> | null = null,
): Discovery {
  const units: ObservedPath[] = [];
  const errors: DiscoveryError[] = [];
  // Names in one listing are unique: only a root given twice can repeat a unit.
  const seen = roots.length > 1 ? new Set<string>() : null;
  for (const root of roots) {
    if (fs === nodeObservationFs && listRootAsText(root, only, seen, units, errors)) continue;
    let listed: Array<{ name: string | Buffer; directory: boolean | null }>;
    try {
      listed = fs.listDir ? fs.listDir(root) : fs.readdir(root).map((name) => ({ name, directory: null }));
    } catch (error) {
      errors.push({ stage: 'root', root, error: errorName(error) });
      continue;
    }
    const rootPath: ObservedPath = { display: root, fs: root };
    const prefix = childPrefix(rootPath);
    // The entries that may be units: a name listed as text is its own candidate (no object more
    // per unit of 10,000), one listed as bytes is carried with its decoded text.
    const candidates: Candidate[] = [];
    let plain = true;
    for (let i = 0; i < listed.length; i += 1) {
      const entry = listed[i]!;
      // A file, FIFO or device by the listing: a stat would say "not a directory" too.
      if (entry.directory === false) continue;
      const raw = entry.name;
      const candidate: Candidate = typeof raw === 'string' ? (entry as Candidate) : { name: decodeSurrogateEscape(raw), directory: entry.directory, raw };
      if (!isStateDirName(candidate.name)) continue;
      if (plain && hasSurrogate(candidate.name)) plain = false;
      candidates.push(candidate);
    }
    // Without surrogates, UTF-16 order (the native comparison) is code point order.
    candidates.sort(plain ? (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : (a, b) => compareCodePoints(a.name, b.name));
    for (let i = 0; i < candidates.length; i += 1) {
      const { name, directory } = candidates[i]!;
      const unit = entryPath(rootPath, candidates[i]!.raw ?? name, name, prefix);
      if (only !== null && !only.has(unit.display)) continue;
      if (seen !== null) {
        if (seen.has(unit.display)) continue;
        seen.add(unit.display);
      }
      if (directory === true) units.push(unit);
      else admitByStat(unit, fs, units, errors);
    }
  }
  return { units, errors };
}

/** A listed unit the listing cannot vouch for (a symlink, or any entry of a root a stat could fail in): a stat says. */
function admitByStat(unit: ObservedPath, fs: ObservationFs, units: ObservedPath[], errors: DiscoveryError[]): void {
  let facts: FileFacts | undefined;
  try {
    facts = fs.stat(unit.fs);
  } catch (error) {
    errors.push({ stage: 'unit-entry', unit: unit.display, error: errorName(error) });
    return;
  }
  // Listed but gone when stated: a dangling symlink (or a unit removed meanwhile).
  if (facts === undefined) errors.push({ stage: 'unit-entry', unit: unit.display, error: errorName(noEntry()) });
  else if (facts.isDirectory()) units.push(unit);
}

/**
 * discoverUnits' own listing of one root through node:fs (the bin's, and any sweep given
 * nodeObservationFs): the same typed readdir and the same decisions as the general path through
 * listDir, without an object per listed entry or per candidate (10,000 of each, made and dropped
 * in discovery's one pass, where V8 has not optimized the loop yet). Names are kept as text, sorted
 * natively when no name holds a surrogate, and a unit's path is the root's prefix and its name.
 * Returns false, having added nothing, when a state-dir name did not decode as UTF-8 (U+FFFD): the
 * general path lists that root again as bytes. A root that cannot be listed is its error.
 */
function listRootAsText(root: string, only: ReadonlySet<string> | null, seen: Set<string> | null, units: ObservedPath[], errors: DiscoveryError[]): boolean {
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch (error) {
    errors.push({ stage: 'root', root, error: errorName(error) });
    return true;
  }
  const trusted = isSearchable(root);
  const names: string[] = [];
  // The names only a stat can resolve (symlinks; every name when the root cannot be trusted).
  let byStat: Set<string> | null = null;
  let plain = true;
  for (let i = 0; i < entries.length; i += 1) {
    const entry = entries[i]!;
    const name = entry.name;
    if (!isStateDirName(name)) continue;
    // A name that was not UTF-8 decodes with U+FFFD (as does a real U+FFFD): its bytes decide.
    if (name.includes('\ufffd')) return false;
    if (!trusted || entry.isSymbolicLink()) (byStat ??= new Set()).add(name);
    // A file, FIFO or device by the listing: a stat would say "not a directory" too.
    else if (!entry.isDirectory()) continue;
    if (plain && hasSurrogate(name)) plain = false;
    names.push(name);
  }
  // Without surrogates, UTF-16 order (the native sort's) is code point order. A name listed as
  // UTF-8 text holds a surrogate only as half of a pair, which names the same file as a string.
  if (plain) names.sort();
  else names.sort(compareCodePoints);
  const prefix = childPrefix({ display: root, fs: root });
  for (let i = 0; i < names.length; i += 1) {
    const display = prefix + names[i]!;
    if (only !== null && !only.has(display)) continue;
    if (seen !== null) {
      if (seen.has(display)) continue;
      seen.add(display);
    }
    const unit: ObservedPath = { display, fs: display };
    if (byStat === null || !byStat.has(names[i]!)) units.push(unit);
    else admitByStat(unit, nodeObservationFs, units, errors);
  }
  return true;
}

/** The path to stat for the target an entry named (an in-unit entry through the unit's own bytes). */
function targetPath(unit: ObservedPath, step: ResultTarget): FsPath {
  // A target holding escapes (an entry that is not UTF-8) is stated by the bytes it names.
  if (step.relative === null) return hasSurrogate(step.target) ? encodeSurrogateEscape(step.target) : step.target;
  return childPath(unit, step.relative).fs;
}

function observeResult(unit: ObservedPath, fs: ObservationFs): ResultOutcome {
  const step = resolveEntry(entryPathText(fs.readEntry(unit.fs, STATE_FILES.resultFile)), unit.display);
  if ('pathState' in step) return step;
  return classifyTarget(step.target, statFact(fs, targetPath(unit, step)));
}

/** Observe one unit. Never throws: whatever could not be observed becomes an error entry. */
export function inspectUnit(
  unit: ObservedPath,
  options: { includeLegacyPid: boolean },
  fs: ObservationFs = nodeObservationFs,
): UnitRecord {
  let outcome: ResultOutcome;
  try {
    outcome = observeResult(unit, fs);
  } catch (error) {
    outcome = failedClassification(errorName(error));
  }
  let tail: UnitObservation['tail'];
  try {
    // A plain string path needs no byte handling: `dir/tail` as it is.
    const tailPath = typeof unit.fs === 'string' ? `${unit.fs}/${STATE_FILES.tail}` : childPath(unit, STATE_FILES.tail).fs;
    tail = tailBytesOf(statFact(fs, tailPath));
  } catch (error) {
    tail = { bytes: null, error: { stage: 'tail', error: errorName(error) } };
  }
  const observation: UnitObservation = { unit: unit.display, outcome, tail };
  if (options.includeLegacyPid) {
    try {
      observation.legacyPid = legacyPidOf(fs.readEntry(unit.fs, STATE_FILES.dispatchPid));
    } catch (error) {
      observation.legacyPid = { value: null, error: { stage: 'legacy-pid', error: errorName(error) } };
    }
  }
  return buildRecord(observation);
}

// --- the sweep's own reading of a unit through node:fs --------------------------------------------
//
// A sweep over 10,000 units spends most of its JavaScript on the per-unit path, and on V8's work to
// compile it: inspectUnit goes through the ObservationFs seam, which answers every case (any file
// system, any failure) with a result object a layer. The usual unit (a string path, every call
// answering) is observed here in one flat function that makes the same system calls (the entry
// read by kit's readHeadShared: stat, open O_RDONLY | O_NONBLOCK | O_NOCTTY, fstat, read, close;
// then a stat of the target and of the tail) and leaves every decision to the same classification
// functions; anything else (a call that fails, an entry that is not a regular file or is over
// MAX_ENTRY_BYTES, a name kept as bytes, the legacy pid asked for) gives up, and that unit is
// observed again by inspectUnit, which reports it. One try around the whole call catches what
// gives up by throwing, where inspectUnit wraps every call. seam.test.ts checks that both paths
// give the same records.

const ABSENT_ENTRY: EntryText = Object.freeze({ ok: false, problem: 'absent' });

/** Python's whitespace below U+0080 by byte: a UTF-8 byte under 0x80 is that character alone. */
const ASCII_SPACE = new Uint8Array(0x80);
for (const code of PY_WHITESPACE_CODE_POINTS) if (code < 0x80) ASCII_SPACE[code] = 1;

function isAsciiSpace(byte: number): boolean {
  return byte < 0x80 && ASCII_SPACE[byte] === 1;
}

/** The record of a unit as inspectUnit makes it, or null when this path does not cover the unit. */
function quickRecord(unit: ObservedPath): UnitRecord | null {
  const dir = unit.fs;
  if (typeof dir !== 'string') return null;
  let outcome: ResultOutcome;
  // kit's bounded non-blocking read (stat, open O_RDONLY | O_NONBLOCK | O_NOCTTY, fstat, read to
  // the size fstat gave, close) into its shared buffer, looked at here without a copy.
  const read = readHeadShared(`${dir}/${STATE_FILES.resultFile}`, ENTRY_READ);
  if (!read.ok) {
    // Anything but an absent entry (a directory, a FIFO, a refused call, an entry over 64 KiB) is
    // inspectUnit's to report.
    if (read.problem !== 'absent') return null;
    outcome = resolveEntry(ABSENT_ENTRY, unit.display) as ResultOutcome;
  } else {
    const buffer = read.buffer;
    let length = read.length;
    // The ASCII whitespace around the path (its newline) is left out before decoding, so the
    // target is one plain string rather than a slice that keeps the whole entry's text alive
    // until the output is written; resolveEntry strips whatever else Python would.
    let start = 0;
    while (start < length && isAsciiSpace(buffer[start]!)) start += 1;
    while (length > start && isAsciiSpace(buffer[length - 1]!)) length -= 1;
    const text = buffer.toString('utf8', start, length);
    // Bytes that are not UTF-8 name their path as bytes: inspectUnit's (entryPathText).
    if (text.includes('\ufffd') && !isUtf8(buffer.subarray(start, length))) return null;
    const step = resolveEntry({ ok: true, text }, unit.display);
    // The target is text decoded from valid UTF-8, which holds no lone surrogate, and an in-unit
    // target is the unit's own path and the entry: the string names the file as it is (what
    // targetPath gives for it, without its test).
    outcome = 'pathState' in step ? step : classifyTarget(step.target, factOf(statSync(step.target, NO_THROW)));
  }
  const tail = tailBytesOf(factOf(statSync(`${dir}/${STATE_FILES.tail}`, NO_THROW)));
  return buildRecord({ unit: unit.display, outcome, tail });
}

/** A unit's record: through quickRecord when the sweep reads node:fs itself, else inspectUnit. */
export function observeUnit(unit: ObservedPath, options: { includeLegacyPid: boolean }, fs: ObservationFs = nodeObservationFs): UnitRecord {
  if (fs === nodeObservationFs && !options.includeLegacyPid) {
    let record: UnitRecord | null = null;
    try {
      record = quickRecord(unit);
    } catch {
      // Whatever threw (a refused stat, a NUL in an entry, ...) is inspectUnit's to report.
    }
    if (record !== null) return record;
  }
  return inspectUnit(unit, options, fs);
}

/** A sweep before its units are observed: what discovery found. */
export interface SweepPlan {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  /** One record per unit is to come, in this order (observeUnit never throws). */
  units: ObservedPath[];
  /** The units are in path order (one root: discovery lists its units in code point order). */
  inPathOrder: boolean;
}

/**
 * Discovery of a sweep; roots are made absolute against `cwd` first. `only` keeps just the units
 * at those absolute paths (a batch's recorded state dirs).
 */
export function planSweep(
  rootArgs: readonly string[],
  options: { cwd?: string; only?: ReadonlySet<string> | null },
  fs: ObservationFs = nodeObservationFs,
): SweepPlan {
  const cwd = options.cwd ?? process.cwd();
  const roots = rootArgs.map((root) => resolve(cwd, root));
  const discovery = discoverUnits(roots, fs, options.only ?? null);
  return { roots, discoveryErrors: discovery.errors, units: discovery.units, inPathOrder: roots.length === 1 };
}

export interface Sweep {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  records: UnitRecord[];
  /** The records are in path order (one root: discovery lists its units in code point order). */
  inPathOrder: boolean;
}

/** Discover and inspect every unit (planSweep, then observeUnit for each). */
export function sweep(
  rootArgs: readonly string[],
  options: { includeLegacyPid: boolean; cwd?: string; only?: ReadonlySet<string> | null },
  fs: ObservationFs = nodeObservationFs,
): Sweep {
  const plan = planSweep(rootArgs, options, fs);
  const records = plan.units.map((unit) => observeUnit(unit, options, fs));
  return { roots: plan.roots, discoveryErrors: plan.discoveryErrors, records, inPathOrder: plan.inPathOrder };
}
