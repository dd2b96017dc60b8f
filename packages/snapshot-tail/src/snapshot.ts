import { randomBytes } from 'node:crypto';
import { rmSync, unlinkSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { DestinationExistsError, atomicTempPath, isDirectory, linkNoReplace, removeStaleTemps } from '@prun/kit/fs';
import { pyExceptionName } from '@prun/kit/py';
import { STATE_FILES } from '@prun/unit-state';
import { TrailingReader, buildManifest, validateArchive, writeArchive, type Manifest, type ReadBack } from './archive.js';
import { ensureDestDir, planDestination, type DestinationLever } from './destination.js';
import { createChunkHasher, type ChunkHasher } from './hasher.js';
import { EXIT, SnapshotError, osErrorText } from './errors.js';
import type { SnapshotEnv } from './options.js';
import { defaultSourceIo, openTail, type CopyResult, type OpenTail, type SourceIo } from './source.js';

/** One snapshot request, as plain data. Empty `dest`/`output` must already be dropped. */
export interface SnapshotRequest {
  unit: string;
  dest?: string;
  output?: string;
  env: SnapshotEnv;
  cwd: string;
  /** How the caller can pick another destination (the refusal's advice); default `dest-option`. */
  destinationLever?: DestinationLever;
}

/** A published snapshot. `warning` is set when the temporary name could not be removed. */
export interface SnapshotOutcome {
  published: string;
  manifest: Manifest;
  warning: string | null;
}

/**
 * Every step that touches the outside world, so tests can inject the faults the Python suite
 * produced by monkey-patching (a failing link, unlink, chmod, writer or validator, a source that
 * grows, shrinks or changes type).
 */
export interface SnapshotSeams {
  source: SourceIo;
  now(): Date;
  randomHex(bytes: number): string;
  createTemp(dir: string, name: string): Promise<FileHandle>;
  chmodTemp(handle: FileHandle, mode: number): Promise<void>;
  /** A replacement must feed `readBack` as `writeArchive` does (`begin`, then `follow` each piece), or the validation refuses the archive. */
  writeArchive(
    out: FileHandle,
    tail: OpenTail,
    manifestFor: (copy: CopyResult) => Manifest,
    io: SourceIo,
    hasher: ChunkHasher,
    readBack: TrailingReader,
  ): Promise<Manifest>;
  /** `readBack` is what the trailing reader read of `tail.bin` while the archive was written. */
  validateArchive(path: string, expected: Record<string, unknown>, readBack: ReadBack): Promise<void>;
  link(temp: string, final: string): void;
  unlink(path: string): void;
}

export const defaultSeams: SnapshotSeams = {
  source: defaultSourceIo,
  now: () => new Date(),
  randomHex: (bytes) => randomBytes(bytes).toString('hex'),
  createTemp: (dir, name) => open(join(dir, name), 'wx', 0o600),
  chmodTemp: (handle, mode) => handle.chmod(mode),
  writeArchive,
  validateArchive,
  link: linkNoReplace,
  unlink: unlinkSync,
};

// Temporary archives are `.snap-part.snapshot-tail-<pid>-<nonce>.tmp` (kit's temp naming): the
// pid lets the next run in the same directory remove a part a killed run left behind, and never
// a live run's.
const TEMP_TARGET = 'snap-part';
const TEMP_TAG = 'snapshot-tail';

// Temporary archives of runs in progress, so a signal handler can remove them before exiting.
const liveTemps = new Set<string>();

/** Remove the temporary files of snapshots still in progress (for signal handlers). */
export function removeLiveTemporaryFiles(): void {
  for (const path of liveTemps) rmSync(path, { force: true });
  liveTemps.clear();
}

/** `abspath(--unit)`, which must be a directory (a symlink to one is fine), else exit 2. */
export function resolveUnitDir(unit: string, cwd: string): string {
  const dir = resolve(cwd, unit);
  if (!isDirectory(dir)) throw new SnapshotError(`${dir} is not a directory`, EXIT.usage);
  return dir;
}

async function createPrivateTemp(destDir: string, seams: SnapshotSeams): Promise<{ path: string; handle: FileHandle }> {
  for (let attempt = 0; ; attempt += 1) {
    const path = atomicTempPath(join(destDir, TEMP_TARGET), { tag: TEMP_TAG, nonce: seams.randomHex(8) });
    try {
      const handle = await seams.createTemp(destDir, basename(path));
      return { path, handle };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && attempt < 10) continue;
      throw new SnapshotError(`cannot create a temporary file in ${destDir}: ${osErrorText(error)}`, EXIT.publish);
    }
  }
}

/** Remove the temporary archives that killed runs left in `destDir` (their pid is gone). */
export function removeStaleParts(destDir: string): string[] {
  return removeStaleTemps(destDir, { tag: TEMP_TAG, target: TEMP_TARGET });
}

/** Hard-link the validated archive to its final name; never replaces, never falls back. */
export function publishByLink(temp: string, final: string, link: SnapshotSeams['link']): void {
  try {
    link(temp, final);
  } catch (error) {
    if (error instanceof DestinationExistsError) {
      throw new SnapshotError(`${final} already exists; refusing to replace`, EXIT.collision);
    }
    throw new SnapshotError(
      `cannot publish by hard link (${pyExceptionName(error)}: ${osErrorText(error)}); not falling back to a replacing operation`,
      EXIT.publish,
    );
  }
}

/**
 * Snapshot one unit's tail: check the unit, plan and secure the destination, open the tail,
 * stream at most its size-at-open into a private temporary ZIP while a second reader reads each
 * piece of tail.bin back from that file, validate the closed archive (against the region read
 * back), publish it by hard link. Failures are SnapshotErrors with their documented exit code. Whatever fails, the
 * temporary file is removed and nothing but a validated archive ever appears at the final name.
 */
export async function snapshotTail(request: SnapshotRequest, overrides: Partial<SnapshotSeams> = {}): Promise<SnapshotOutcome> {
  const seams: SnapshotSeams = { ...defaultSeams, ...overrides };
  const unitDir = resolveUnitDir(request.unit, request.cwd);
  const sourcePath = join(unitDir, STATE_FILES.tail);
  const plan = planDestination({
    ...(request.output !== undefined ? { output: request.output } : {}),
    ...(request.dest !== undefined ? { dest: request.dest } : {}),
    env: request.env,
    cwd: request.cwd,
    now: seams.now(),
    randomHex8: seams.randomHex(4),
  });
  ensureDestDir(plan.destDir, request.destinationLever);
  removeStaleParts(plan.destDir);
  const tail = await openTail(sourcePath, seams.source);
  let temp: { path: string; handle: FileHandle } | undefined;
  let published = false;
  // Two hashers: the copy's SHA-256 is taken here, on this thread, as each piece is read, while
  // the read-back of the archive file that trails it has its SHA-256 and CRC-32 taken on a worker
  // thread (for a large tail). Each SHA-256 pass alone takes about as long as all the reads and
  // writes together, so with both on one thread that thread was the critical path (1 GiB: 1.6 s
  // of hashing there against 0.8 s of copying here); split, the two threads are about even.
  let copyHasher: ChunkHasher | undefined;
  let readBackHasher: ChunkHasher | undefined;
  let trailing: TrailingReader | undefined;
  try {
    temp = await createPrivateTemp(plan.destDir, seams);
    liveTemps.add(temp.path);
    try {
      await seams.chmodTemp(temp.handle, 0o600);
    } catch (error) {
      throw new SnapshotError(`cannot make ${temp.path} private: ${osErrorText(error)}`, EXIT.publish);
    }
    let manifest: Manifest;
    copyHasher = createChunkHasher(tail.sizeAtOpen, { thread: false });
    readBackHasher = createChunkHasher(tail.sizeAtOpen, { crc32: true });
    trailing = await TrailingReader.open(temp.path, temp.handle, readBackHasher);
    let readBack: ReadBack;
    try {
      manifest = await seams.writeArchive(
        temp.handle,
        tail,
        (copy) => buildManifest({ capturedAt: seams.now(), sourcePath, sizeAtOpen: tail.sizeAtOpen, copy }),
        seams.source,
        copyHasher,
        trailing,
      );
      readBack = await trailing.finish();
    } catch (error) {
      if (error instanceof SnapshotError) throw error;
      throw new SnapshotError(`cannot build archive: ${osErrorText(error)}`, EXIT.archive);
    }
    await seams.validateArchive(temp.path, manifest as unknown as Record<string, unknown>, readBack);
    publishByLink(temp.path, plan.final, seams.link);
    published = true;
    let warning: string | null = null;
    try {
      seams.unlink(temp.path);
    } catch (error) {
      warning = `published, but the temporary file ${temp.path} remains: ${osErrorText(error)}`;
    }
    return { published: plan.final, manifest, warning };
  } finally {
    await trailing?.close();
    await readBackHasher?.close();
    await copyHasher?.close();
    await tail.handle.close().catch(() => undefined);
    if (temp !== undefined) {
      await temp.handle.close().catch(() => undefined);
      if (!published) rmSync(temp.path, { force: true });
      liveTemps.delete(temp.path);
    }
  }
}
