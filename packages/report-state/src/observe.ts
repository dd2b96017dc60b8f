import { readdirSync, statSync } from 'node:fs';
import { pyExceptionName } from '@prun/kit/py';
import { resolve } from 'node:path';
import { STATE_FILES, isStateDirName, readStateEntry, type EntryRead } from '@prun/unit-state';
import {
  classifyTarget,
  failedClassification,
  legacyPidOf,
  resolveEntry,
  tailBytesOf,
  type ResultOutcome,
  type StatFact,
} from './classify.js';
import { childPath, compareCodePoints, decodeSurrogateEscape, type FsPath, type ObservedPath } from './names.js';
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
  /** Entry names of a directory, as raw bytes. Throws like node:fs. */
  readdir(dir: FsPath): Buffer[];
  /** stat following symlinks. Throws like node:fs. */
  stat(path: FsPath): FileFacts;
  /** One state entry of a unit (at most 64 KiB, regular files only, never blocks). */
  readEntry(unitDir: FsPath, name: string): EntryRead;
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

export const nodeObservationFs: ObservationFs = {
  readdir: (dir) => readdirSync(dir, { encoding: 'buffer' }),
  stat: (path) => statSync(path),
  // A Buffer path reaches a unit whose name is not valid UTF-8.
  readEntry: (unitDir, name) => readStateEntry(unitDir, name),
};

/** stat as a fact; a non-system failure (such as a NUL in the path) is rethrown. */
function statFact(fs: ObservationFs, path: FsPath): StatFact {
  let facts: FileFacts;
  try {
    facts = fs.stat(path);
  } catch (error) {
    if (!isSystemError(error)) throw error;
    if ((error as { code?: unknown }).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'error', code: errorName(error) };
  }
  return facts.isFile() ? { kind: 'regular', size: facts.size } : { kind: 'not-regular' };
}

export interface Discovery {
  units: ObservedPath[];
  errors: DiscoveryError[];
}

/**
 * The unit directories under each root, roots in the given order, names sorted, each unit
 * once even when roots repeat. A root that cannot be listed, or a matching entry that cannot
 * be stated, is an error, never an empty result. Non-directories are skipped.
 */
export function discoverUnits(roots: readonly string[], fs: ObservationFs = nodeObservationFs): Discovery {
  const units: ObservedPath[] = [];
  const errors: DiscoveryError[] = [];
  const seen = new Set<string>();
  for (const root of roots) {
    let names: Buffer[];
    try {
      names = fs.readdir(root);
    } catch (error) {
      errors.push({ stage: 'root', root, error: errorName(error) });
      continue;
    }
    const candidates = names
      .map((raw) => ({ raw, name: decodeSurrogateEscape(raw) }))
      .filter((entry) => isStateDirName(entry.name))
      .sort((a, b) => compareCodePoints(a.name, b.name));
    for (const { raw } of candidates) {
      const unit = childPath({ display: root, fs: root }, raw);
      if (seen.has(unit.display)) continue;
      seen.add(unit.display);
      let facts: FileFacts;
      try {
        facts = fs.stat(unit.fs);
      } catch (error) {
        errors.push({ stage: 'unit-entry', unit: unit.display, error: errorName(error) });
        continue;
      }
      if (facts.isDirectory()) units.push(unit);
    }
  }
  return { units, errors };
}

function observeResult(unit: ObservedPath, fs: ObservationFs): ResultOutcome {
  const step = resolveEntry(fs.readEntry(unit.fs, STATE_FILES.resultFile), unit.display);
  if ('pathState' in step) return step;
  const targetFs = step.relative === null ? step.target : childPath(unit, step.relative).fs;
  return classifyTarget(step.target, statFact(fs, targetFs));
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
    tail = tailBytesOf(statFact(fs, childPath(unit, STATE_FILES.tail).fs));
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

export interface Sweep {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  records: UnitRecord[];
}

/** Discover and inspect every unit; roots are made absolute against `cwd` first. */
export function sweep(
  rootArgs: readonly string[],
  options: { includeLegacyPid: boolean; cwd?: string },
  fs: ObservationFs = nodeObservationFs,
): Sweep {
  const cwd = options.cwd ?? process.cwd();
  const roots = rootArgs.map((root) => resolve(cwd, root));
  const discovery = discoverUnits(roots, fs);
  const records = discovery.units.map((unit) => inspectUnit(unit, options, fs));
  return { roots, discoveryErrors: discovery.errors, records };
}
