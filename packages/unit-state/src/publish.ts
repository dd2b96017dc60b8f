import { DestinationExistsError, linkNoReplace, writeFileAtomic, writeFileAtomicAsync, type AtomicContent } from '@prun/kit/fs';

export { DestinationExistsError, linkNoReplace, type AtomicContent };

export interface PublishOptions {
  /** Names the writer in the temp file name, e.g. `dispatch-task-agy`. */
  tag?: string;
  /** Makes the temp file name unique; defaults to a fresh random value. */
  nonce?: string;
  /** File mode for the published file (before umask). */
  mode?: number;
}

/**
 * Publish `data` at `path` atomically and durably with @prun/kit/fs's writer: a temp file
 * `.<name>.<tag>-<pid>-<nonce>.tmp` in the same directory, fsync'ed, renamed over `path`
 * (replacing it: a new inode), then the directory fsync'ed. Readers see the old content or the
 * new, never a partial file. The parent directory is created if needed. The temp file never
 * survives. `data` may be a writer that streams the content into the temp file in pieces
 * (`writeFallback` does), so a large result is never held whole.
 */
export function publishAtomic(path: string, data: AtomicContent, options: PublishOptions = {}): void {
  writeFileAtomic(path, data, options);
}

/**
 * `publishAtomic` whose two fsyncs wait on libuv's thread pool, not on the event loop (kit's
 * `writeFileAtomicAsync`): the same steps in the same order, for a process that runs other work
 * meanwhile (a batch's supervisor publishing one unit's result while its other units run).
 */
export function publishAtomicAsync(path: string, data: AtomicContent, options: PublishOptions = {}): Promise<void> {
  return writeFileAtomicAsync(path, data, options);
}

/**
 * Write `data` beside `path` and publish it by hard link, so an existing `path` is never
 * replaced (two racing publishers: exactly one wins, the other gets DestinationExistsError).
 * The parent must exist.
 */
export function publishNoReplace(path: string, data: string | Uint8Array, options: PublishOptions = {}): void {
  writeFileAtomic(path, data, { ...options, replace: false, createParent: false });
}
