import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STATE_DIR_PREFIX, STATE_FILES } from '@prun/unit-state';
import type { DiscoveryError, Summary, UnitRecord } from '../src/index.js';

export const BIN = fileURLToPath(new URL('../bin/prun-report-state.cjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
/** Loads a bin's code as root, then drops to uid/gid 65534 and runs it (tools/main-as-nobody.mjs). */
const MAIN_AS_NOBODY = fileURLToPath(new URL('../../../tools/main-as-nobody.mjs', import.meta.url));
const NOBODY = 65534;

const made: string[] = [];

/** A fresh real (symlink-free) temporary directory, removed by `cleanupTempDirs`. */
export function tempDir(prefix = 'prun-rs-test-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

export function cleanupTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export interface UnitSpec {
  /** Literal `result-file` content (no newline added). */
  resultEntry?: string | Buffer;
  /** When given, the entry's path (absolute) is created with this body. */
  resultBody?: string;
  /** `tail` bytes; null for no tail file. */
  tail?: string | Buffer | null;
  dispatchPid?: string | Buffer;
}

/** `root/prun-task-<name>/` with the entries the upstream fixture `make_unit` writes. */
export function makeUnit(root: string, name: string, spec: UnitSpec = {}): string {
  const unit = join(root, `${STATE_DIR_PREFIX}${name}`);
  mkdirSync(unit, { recursive: true });
  const tail = spec.tail === undefined ? '' : spec.tail;
  if (tail !== null) writeFileSync(join(unit, STATE_FILES.tail), tail);
  if (spec.resultEntry !== undefined) writeFileSync(join(unit, STATE_FILES.resultFile), spec.resultEntry);
  if (spec.resultBody !== undefined && typeof spec.resultEntry === 'string') {
    const target = spec.resultEntry.startsWith('/') ? spec.resultEntry : join(unit, spec.resultEntry);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, spec.resultBody);
  }
  if (spec.dispatchPid !== undefined) writeFileSync(join(unit, STATE_FILES.dispatchPid), spec.dispatchPid);
  return unit;
}

export interface BinRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Run the built bin as a user would, with a small controlled environment. */
export function runBin(args: readonly string[], options: SpawnSyncOptions = {}): BinRun {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1', ...options.env };
  // Asked to run as nobody while root: load the code as root and drop afterwards, so the run
  // does not depend on the checkout being readable to nobody (a 0700 clone dir).
  const { uid, gid, ...rest } = options;
  const dropAfterLoad = uid === NOBODY && process.getuid?.() === 0;
  const argv = dropAfterLoad ? [MAIN_AS_NOBODY, CLI, ...args] : [BIN, ...args];
  const result = spawnSync(process.execPath, argv, {
    timeout: 20_000,
    ...(dropAfterLoad ? rest : options),
    env,
    encoding: 'utf8',
  });
  const error = result.error as NodeJS.ErrnoException | undefined;
  return {
    status: result.status,
    signal: result.signal,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
    timedOut: error?.code === 'ETIMEDOUT',
  };
}

/** The parsed `--json` document; its shape is the library's own record and summary types. */
export type JsonUnit = UnitRecord;

export interface JsonReport {
  schema_version: number;
  roots: string[];
  unit_count: number;
  discovery_errors: DiscoveryError[];
  units: JsonUnit[];
  safety: string;
  summary?: Summary;
}

/** `--root <root> --json [extra]`: exit code, parsed report, and units by basename. */
export function runJson(root: string | string[], extra: string[] = [], options: SpawnSyncOptions = {}) {
  const roots = (Array.isArray(root) ? root : [root]).flatMap((r) => ['--root', r]);
  const run = runBin([...roots, '--json', ...extra], options);
  const report = JSON.parse(run.stdout) as JsonReport;
  const byName = new Map(report.units.map((u) => [u.unit.slice(u.unit.lastIndexOf('/') + 1), u]));
  return { ...run, report, byName };
}

export function pair(unit: JsonUnit | undefined): [string, string] | undefined {
  return unit && [unit.result_path_state, unit.result];
}

/**
 * A digest of everything a writer could change under `root`: every entry's relative path
 * (raw bytes), type, mode, size, mtime in nanoseconds, file contents where readable and
 * symlink targets. FIFOs and sockets are never opened.
 */
export function treeHash(root: string): string {
  const hash = createHash('sha256');
  const visit = (dir: Buffer, rel: Buffer): void => {
    let names: Buffer[];
    try {
      names = readdirSync(dir, { encoding: 'buffer' }).sort(Buffer.compare);
    } catch (error) {
      hash.update(`unlistable:${(error as NodeJS.ErrnoException).code}\n`);
      return;
    }
    for (const name of names) {
      const path = Buffer.concat([dir, Buffer.from('/'), name]);
      const relPath = Buffer.concat([rel, Buffer.from('/'), name]);
      const stats = lstatSync(path, { bigint: true });
      hash.update(relPath);
      hash.update(`\0${stats.mode}\0${stats.size}\0${stats.mtimeNs}\0${stats.nlink}\0`);
      if (stats.isSymbolicLink()) hash.update(readlinkSync(path, { encoding: 'buffer' }));
      else if (stats.isFile()) {
        try {
          hash.update(readFileSync(path));
        } catch (error) {
          hash.update(`unreadable:${(error as NodeJS.ErrnoException).code}`);
        }
      } else if (stats.isDirectory()) visit(path, relPath);
      hash.update('\n');
    }
  };
  const top = lstatSync(root, { bigint: true });
  hash.update(`${top.mode}\0${top.mtimeNs}\n`);
  visit(Buffer.from(root), Buffer.alloc(0));
  return hash.digest('hex');
}

let unprivileged: { uid?: number; gid?: number } | null | undefined;

/**
 * Spawn options under which chmod 000 really denies access. As root (CI here runs as root,
 * where permission bits do not deny reads) that means dropping to uid/gid 65534; null when
 * that is not possible, so callers skip with a visible note instead of passing vacuously.
 */
export function unprivilegedSpawn(): { uid?: number; gid?: number } | null {
  if (unprivileged !== undefined) return unprivileged;
  if (process.getuid?.() !== 0) {
    unprivileged = {};
    return unprivileged;
  }
  const probe = runBin(['--help'], { uid: NOBODY, gid: NOBODY });
  unprivileged = probe.status === 0 ? { uid: NOBODY, gid: NOBODY } : null;
  return unprivileged;
}
