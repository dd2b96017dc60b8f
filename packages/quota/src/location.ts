import os from 'node:os';
import path from 'node:path';
import { pyStrip } from './models.js';

/** An environment as `process.env` holds it. */
export type Env = Readonly<Record<string, string | undefined>>;

export interface SnapshotLocation {
  /** Absolute (or caller-given) path of the snapshot file. */
  readonly path: string;
  /** True for `~/.claude/agy-quota-cache.json`, which prun may refresh and age-check. */
  readonly managed: boolean;
}

/** The home directory: `HOME` from the given environment, else the OS account's home. */
export function homeDir(env: Env): string {
  const fromEnv = process.platform === 'win32' ? (env['USERPROFILE'] ?? env['HOME']) : env['HOME'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : os.homedir();
}

/** The managed snapshot path, shared with the Python `agent-quota.py` readout. */
export function managedSnapshotPath(env: Env): string {
  return path.join(homeDir(env), '.claude', 'agy-quota-cache.json');
}

/**
 * Where the snapshot lives. A non-blank `AGY_QUOTA_CACHE` names a caller-owned file: the
 * dispatcher reads it as it is, never refreshes it and never checks its age.
 */
export function snapshotLocation(env: Env): SnapshotLocation {
  const override = pyStrip(env['AGY_QUOTA_CACHE'] ?? '');
  if (override !== '') return { path: override, managed: false };
  return { path: managedSnapshotPath(env), managed: true };
}

export function attemptMarkerPath(snapshotPath: string): string {
  return `${snapshotPath}.last-attempt`;
}

export function refreshLockPath(snapshotPath: string): string {
  return `${snapshotPath}.refresh.lock`;
}
