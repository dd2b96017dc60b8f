import { randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface PublishOptions {
  /** Names the writer in the temp file name, e.g. `dispatch-task-agy`. */
  tag?: string;
  /** Makes the temp file name unique; defaults to a fresh random value. */
  nonce?: string;
  /** File mode for the published file (before umask). */
  mode?: number;
}

function tempPathFor(path: string, { tag = 'prun', nonce = randomUUID().slice(0, 8) }: PublishOptions): string {
  return join(dirname(path), `.${basename(path)}.${tag}-${process.pid}-${nonce}.tmp`);
}

/**
 * Publish `data` at `path` atomically: write a temp file in the same directory, then rename it
 * over `path` (replacing it). Readers see the old content or the new, never a partial file.
 * The parent directory is created if needed. The temp file never survives.
 */
export function publishAtomic(path: string, data: string | Uint8Array, options: PublishOptions = {}): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = tempPathFor(path, options);
  try {
    writeFileSync(temp, data, { flag: 'wx', mode: options.mode ?? 0o666 });
    renameSync(temp, path);
  } finally {
    rmSync(temp, { force: true });
  }
}

/** Thrown by `publishNoReplace` when something already exists at the destination. */
export class DestinationExistsError extends Error {
  readonly code = 'EEXIST';
  constructor(readonly path: string) {
    super(`destination already exists: ${path}`);
    this.name = 'DestinationExistsError';
  }
}

/**
 * Publish an already written file `source` at `path` by hard link, so an existing `path` is
 * never replaced (two racing publishers: exactly one wins). `source` stays in place; the caller
 * removes it. Throws DestinationExistsError when `path` exists, other errors as they come.
 */
export function linkNoReplace(source: string, path: string): void {
  try {
    linkSync(source, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new DestinationExistsError(path);
    throw error;
  }
}

/** Write `data` to a temp file beside `path` and publish it with `linkNoReplace`. */
export function publishNoReplace(path: string, data: string | Uint8Array, options: PublishOptions = {}): void {
  const temp = tempPathFor(path, options);
  try {
    writeFileSync(temp, data, { flag: 'wx', mode: options.mode ?? 0o666 });
    linkNoReplace(temp, path);
  } finally {
    rmSync(temp, { force: true });
  }
}
