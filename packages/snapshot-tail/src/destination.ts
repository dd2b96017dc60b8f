import { chmodSync, mkdirSync, statSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pyStrip } from '@prun/kit/py';
import { EXIT, SnapshotError, isErrnoException, osErrorText } from './errors.js';
import { BIN, type SnapshotEnv } from './options.js';

/** Where the archive goes: the directory that must be private, and the exact final name. */
export interface DestinationPlan {
  destDir: string;
  final: string;
}

const DEFAULT_SUBDIR = ['anywhere-agents', 'prun', 'snapshots'];

// os.path.join semantics: no normalisation, so a relative XDG_STATE_HOME stays as given.
function joinVerbatim(base: string, parts: readonly string[]): string {
  return parts.reduce((path, part) => (path === '' || path.endsWith('/') ? path + part : `${path}/${part}`), base);
}

/**
 * `$XDG_STATE_HOME/anywhere-agents/prun/snapshots`, or `~/.local/state/...` when it is unset or
 * empty. Not made absolute: a relative XDG_STATE_HOME gives a relative destination.
 */
export function defaultDestDir(env: SnapshotEnv): string {
  const base = env.xdgStateHome ?? joinVerbatim(env.home ?? homedir(), ['.local', 'state']);
  return joinVerbatim(base, DEFAULT_SUBDIR);
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

/** `snapshot-<UTC YYYYMMDDTHHMMSSZ>-<8 lowercase hex>.zip` */
export function archiveName(now: Date, randomHex8: string): string {
  const stamp =
    `${pad(now.getUTCFullYear(), 4)}${pad(now.getUTCMonth() + 1)}${pad(now.getUTCDate())}` +
    `T${pad(now.getUTCHours())}${pad(now.getUTCMinutes())}${pad(now.getUTCSeconds())}Z`;
  return `snapshot-${stamp}-${randomHex8}.zip`;
}

// Python's os.path.basename: everything after the last slash (a trailing slash gives '').
function rawBasename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * The final archive path and its directory. An `--output` whose name does not survive being
 * made absolute and stripped (trailing `/`, a final `.` or `..`, surrounding whitespace) is a
 * usage error, so the archive can never land somewhere other than the name the user typed.
 */
export function planDestination(input: {
  output?: string;
  dest?: string;
  env: SnapshotEnv;
  cwd: string;
  now: Date;
  randomHex8: string;
}): DestinationPlan {
  if (input.output !== undefined) {
    const final = resolve(input.cwd, input.output);
    if (basename(final) !== rawBasename(pyStrip(input.output))) {
      throw new SnapshotError('output name may not traverse', EXIT.usage);
    }
    return { destDir: dirname(final), final };
  }
  const destDir = input.dest !== undefined ? resolve(input.cwd, input.dest) : defaultDestDir(input.env);
  return { destDir, final: join(destDir, archiveName(input.now, input.randomHex8)) };
}

/**
 * How the caller can choose another destination, which decides the advice a refusal gives:
 * snapshot-tail's own `--dest`, or only the environment (a library caller with no such option).
 */
export type DestinationLever = 'dest-option' | 'environment';

/**
 * The refusal for a destination directory others can reach, or null when it is private. The
 * advice depends on what is safe for that directory: `chmod 700` only for the caller's own
 * directory that nobody else can write to (the upstream advice); never for a shared sticky
 * directory such as /tmp (there, a new directory from `mktemp -d`, whose name nobody can
 * predict); a private subdirectory (created 0700 by this tool) where only the caller's group can
 * add entries; elsewhere, where anyone may rename entries, a directory away from it.
 */
export function broadModeProblem(dir: string, mode: number, ownedByCaller = true, lever: DestinationLever = 'dest-option'): string | null {
  if ((mode & 0o077) === 0) return null;
  const shown = (mode & 0o7777).toString(8).padStart(4, '0');
  const head = `${dir} is group- or world-accessible (mode ${shown}); refusing to write snapshots there.`;
  const othersWrite = (mode & 0o022) !== 0;
  const worldWrite = (mode & 0o002) !== 0;
  const sticky = (mode & 0o1000) !== 0;
  const notYours = 'It is not yours, so do not chmod it;';
  // A caller with no --dest (prun clean --snapshot) can only move the default location.
  const viaEnvironment = `set XDG_STATE_HOME to a private directory (snapshots then go in its ${DEFAULT_SUBDIR.join('/')})`;
  const elsewhere = lever === 'environment' ? viaEnvironment : 'use a private directory elsewhere (omit --dest for the default location)';
  const subdirectory = lever === 'environment' ? viaEnvironment : `pass a private subdirectory, which ${BIN} creates 0700: --dest ${dir}/snapshots`;
  if (!othersWrite) return ownedByCaller ? `${head} Fix with: chmod 700 ${dir}` : `${head} ${notYours} ${elsewhere}`;
  if (sticky) {
    if (lever === 'environment') return `${head} It is a shared directory (sticky bit), so do not chmod it; ${viaEnvironment}`;
    return `${head} It is a shared directory (sticky bit), so do not chmod it; use a new private directory inside it instead: --dest "$(mktemp -d ${dir}/snapshots.XXXXXX)"`;
  }
  if (worldWrite) {
    return ownedByCaller
      ? `${head} If only you use it: chmod 700 ${dir}; if others share it, ${elsewhere}, since anyone can rename entries there`
      : `${head} ${notYours} ${elsewhere}, since anyone can rename entries there`;
  }
  return ownedByCaller ? `${head} If only you use it: chmod 700 ${dir}; if your group shares it, ${subdirectory}` : `${head} ${notYours} ${subdirectory}`;
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

function checkExistingDir(dir: string, stats: Stats, lever: DestinationLever): void {
  const euid = process.geteuid?.();
  const problem = broadModeProblem(dir, stats.mode, euid === undefined || stats.uid === euid, lever);
  if (problem !== null) throw new SnapshotError(problem, EXIT.publish);
}

/**
 * Make sure `dir` is a private directory: an existing one must have no group/other bits (it is
 * never chmodded); a missing one is created (parents with default modes) and set to 0700
 * explicitly, whatever the umask. Returns whether it was created.
 */
export function ensureDestDir(dir: string, lever: DestinationLever = 'dest-option'): { created: boolean } {
  const existing = statOrNull(dir);
  if (existing?.isDirectory()) {
    checkExistingDir(dir, existing, lever);
    return { created: false };
  }
  try {
    mkdirSync(dirname(dir), { recursive: true });
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    // Another run may have created it a moment ago; then it is an existing directory.
    const raced = isErrnoException(error) && error.code === 'EEXIST' ? statOrNull(dir) : null;
    if (raced?.isDirectory()) {
      checkExistingDir(dir, raced, lever);
      return { created: false };
    }
    throw new SnapshotError(`cannot create ${dir}: ${osErrorText(error)}`, EXIT.publish);
  }
  try {
    chmodSync(dir, 0o700);
  } catch (error) {
    throw new SnapshotError(`cannot create ${dir}: ${osErrorText(error)}`, EXIT.publish);
  }
  return { created: true };
}
