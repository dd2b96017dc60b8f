// @prun/kit/fs: the one atomic writer, the one bounded non-blocking reader, the one `which`,
// the one `os.path.isdir`/`isfile`, the one parent-death prefix.
import { randomFillSync } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  fsync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  type PathLike,
  type Stats,
} from 'node:fs';
import { basename, delimiter, dirname, join, resolve as resolvePath } from 'node:path';
import { strerror } from '../errno.js';

// --- the atomic writer --------------------------------------------------------------------------

export interface WriteAtomicOptions {
  /** Names the writer in the temp file name (default `prun`), e.g. `dispatch-task-agy`. */
  tag?: string;
  /** Makes the temp file name unique (letters and digits; default 16 random hex digits). */
  nonce?: string;
  /** Mode of the published file, before umask (default 0o666). */
  mode?: number;
  /**
   * fsync the file before publishing and the directory after (default true), so the new name
   * survives a crash. Off for files that are cheap to lose (progress notes).
   */
  durable?: boolean;
  /**
   * false: never replace an existing file; publish by hard link so exactly one of two racing
   * writers wins, the loser gets a DestinationExistsError. Default true (rename over it).
   */
  replace?: boolean;
  /** Create the parent directory when it is missing (default true). */
  createParent?: boolean;
}

/** Thrown by `writeFileAtomic` with `replace: false` when something already exists at the path. */
export class DestinationExistsError extends Error {
  readonly code = 'EEXIST';
  constructor(readonly path: string) {
    super(`destination already exists: ${path}`);
    this.name = 'DestinationExistsError';
  }
}

/**
 * Give the already written file `source` the name `path` by hard link, so an existing `path` is
 * never replaced (two racing publishers: exactly one wins). `source` stays; the caller removes
 * it. Throws DestinationExistsError when `path` exists, other errors as they come.
 */
export function linkNoReplace(source: string, path: string): void {
  try {
    linkSync(source, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new DestinationExistsError(path);
    throw error;
  }
}

/**
 * Temp files are `.<name>.<tag>-<pid>-<nonce>.tmp` beside their destination: hidden, and
 * recognisable as ours with the writer's pid, so `removeStaleTemps` can tell a dead writer's
 * leftover from a live writer's file in progress.
 */
export function atomicTempPath(path: string, options: Pick<WriteAtomicOptions, 'tag' | 'nonce'> = {}): string {
  const tag = options.tag ?? 'prun';
  const nonce = options.nonce ?? randomNonce();
  return join(dirname(path), `.${basename(path)}.${tag}-${process.pid}-${nonce}.tmp`);
}

// Random bytes for default nonces, drawn a block at a time: a batch's supervisor names a temp
// file for every record it writes, and a randomBytes call of its own each time costs more than
// the name. Uniqueness is all a nonce is for (the temp is created O_EXCL).
const NONCE_BYTES = 8;
const noncePool = Buffer.alloc(NONCE_BYTES * 64);
let nonceAt = noncePool.length;

function randomNonce(): string {
  if (nonceAt >= noncePool.length) {
    randomFillSync(noncePool);
    nonceAt = 0;
  }
  const nonce = noncePool.toString('hex', nonceAt, nonceAt + NONCE_BYTES);
  nonceAt += NONCE_BYTES;
  return nonce;
}

const TEMP_NAME = /^\.(.+)\.([A-Za-z0-9_-]+)-([1-9][0-9]*)-([A-Za-z0-9]+)\.tmp$/;

/** The parts of a temp file name made by `atomicTempPath`, or null for any other name. */
export function parseAtomicTempName(name: string): { target: string; tag: string; pid: number; nonce: string } | null {
  const match = TEMP_NAME.exec(name);
  if (match === null) return null;
  const pid = Number(match[3]);
  if (!Number.isSafeInteger(pid)) return null;
  return { target: match[1] as string, tag: match[2] as string, pid, nonce: match[4] as string };
}

/**
 * Flushes a file or a directory that is already written to the disk (fsync through a read-only
 * descriptor): after a directory's entries changed, its fsync is what makes them durable.
 */
export function fsyncPath(path: string): void {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** `fsyncPath` on libuv's thread pool: the event loop runs on while the disk is flushed. */
async function fsyncPathAsync(path: string): Promise<void> {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}

function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error === null ? resolve() : reject(error))));
}

function writeAll(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}

/**
 * What `writeFileAtomic` publishes: the whole text or bytes, or a writer that produces them in
 * pieces (each piece is written to the temp file at once), so a large file is never held whole.
 * A writer that throws publishes nothing: the temp file is removed and the error propagates.
 */
export type AtomicContent = string | Uint8Array | ((write: (piece: string | Uint8Array) => void) => void);

function bytesOf(piece: string | Uint8Array): Uint8Array {
  return typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
}

/**
 * One publication's steps, shared by `writeFileAtomic` and `writeFileAtomicAsync`, which differ
 * only in how they wait for the two fsyncs: `create` makes the temp file (exclusive) and writes
 * `data` into it, its descriptor left open for the fsync; `place` gives it the name `path`. The
 * temp is removed on failure, and after a hard link; after the rename there is none, and nothing
 * is looked up to remove it (a lookup of a name known to be gone is a failed system call and an
 * error object, at every publish).
 */
class Publication {
  readonly dir: string;
  readonly durable: boolean;
  private readonly temp: string;
  /** Whether the temp file exists under its own name and must go before the publication ends. */
  private tempLeft = false;
  fd = -1;

  constructor(
    private readonly path: string,
    private readonly options: WriteAtomicOptions,
  ) {
    this.dir = dirname(path);
    this.durable = options.durable ?? true;
    if (options.createParent ?? true) mkdirSync(this.dir, { recursive: true });
    this.temp = atomicTempPath(path, options);
  }

  create(data: AtomicContent): void {
    // A failed exclusive create made nothing of ours: nothing to remove (not even a namesake's).
    this.fd = openSync(this.temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, this.options.mode ?? 0o666);
    this.tempLeft = true;
    const fd = this.fd;
    if (typeof data === 'function') data((piece) => writeAll(fd, bytesOf(piece)));
    else writeAll(fd, bytesOf(data));
  }

  closeTemp(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    closeSync(fd);
  }

  place(): void {
    if (this.options.replace ?? true) {
      renameSync(this.temp, this.path);
      this.tempLeft = false;
    } else {
      linkNoReplace(this.temp, this.path);
    }
  }

  /** Always, last: the descriptor closed and the temp gone, whatever happened. */
  end(): void {
    try {
      this.closeTemp();
    } finally {
      if (this.tempLeft) rmSync(this.temp, { force: true });
    }
  }
}

/**
 * Publish `data` at `path` so a reader sees the old file or the new one, never a part: write a
 * temp file in the same directory (exclusive create), fsync it, rename it over `path` (or hard
 * link it, with `replace: false`), then fsync the directory. The new file is a new inode: a hard
 * link to the old file keeps the old bytes. The temp file is removed on success and on failure.
 */
export function writeFileAtomic(path: string, data: AtomicContent, options: WriteAtomicOptions = {}): void {
  const publication = new Publication(path, options);
  try {
    publication.create(data);
    if (publication.durable) fsyncSync(publication.fd);
    publication.closeTemp();
    publication.place();
    if (publication.durable) fsyncPath(publication.dir);
  } finally {
    publication.end();
  }
}

/**
 * `writeFileAtomic` with its two fsyncs on libuv's thread pool, in the same order (the file's
 * before the rename, the directory's after it), so a process running many units at once (a
 * batch's supervisor) goes on serving the others while one result reaches the disk. The
 * temp file is created and written, and renamed, synchronously; resolves once the directory is
 * flushed, rejects as `writeFileAtomic` throws.
 */
export async function writeFileAtomicAsync(path: string, data: AtomicContent, options: WriteAtomicOptions = {}): Promise<void> {
  const publication = new Publication(path, options);
  try {
    publication.create(data);
    if (publication.durable) await fsyncAsync(publication.fd);
    publication.closeTemp();
    publication.place();
    if (publication.durable) await fsyncPathAsync(publication.dir);
  } finally {
    publication.end();
  }
}

/** Whether a pid names a live process (signal 0; another user's process, EPERM, is alive). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface RemoveStaleTempsOptions {
  /** Only temps of this tag (default: any tag). */
  tag?: string;
  /** Only temps for this destination name (default: any). */
  target?: string;
  /** Liveness test (default `isPidAlive`). */
  isAlive?: (pid: number) => boolean;
}

/**
 * Remove the temp files a killed writer left in `dir`: names made by `atomicTempPath` whose pid
 * is not a live process. A live writer's temp (including our own) is kept. Returns the removed
 * paths; a directory that cannot be listed removes nothing.
 */
export function removeStaleTemps(dir: string, options: RemoveStaleTempsOptions = {}): string[] {
  const isAlive = options.isAlive ?? isPidAlive;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const parsed = parseAtomicTempName(name);
    if (parsed === null) continue;
    if (options.tag !== undefined && parsed.tag !== options.tag) continue;
    if (options.target !== undefined && parsed.target !== options.target) continue;
    if (parsed.pid === process.pid || isAlive(parsed.pid)) continue;
    const path = join(dir, name);
    try {
      rmSync(path, { force: true });
      removed.push(path);
    } catch {
      // Removed by someone else, or not ours to remove after all.
    }
  }
  return removed;
}

// --- the bounded head reader --------------------------------------------------------------------

/**
 * Why a head could not be read: `absent` (ENOENT), `NotARegularFile` (a FIFO, socket, device or
 * directory: refused at once, never waited on), `EntryTooLarge` (with `overflow: 'refuse'`), or
 * the Node error code of the failing call (`EACCES`, `ENOTDIR`, `ELOOP`, ...).
 */
export type HeadProblem = 'absent' | 'NotARegularFile' | 'EntryTooLarge' | (string & {});

export type HeadRead =
  | { ok: true; bytes: Buffer; text: string; truncated: boolean }
  | { ok: false; problem: HeadProblem };

export interface ReadHeadOptions {
  /** At most this many bytes are returned. */
  maxBytes: number;
  /** A longer file: `truncate` (default) returns its first maxBytes; `refuse` gives EntryTooLarge. */
  overflow?: 'truncate' | 'refuse';
  /**
   * Read the range from this byte on (default 0): a follower reads what was appended since its
   * last call, still bounded by maxBytes. `truncated` then says more follows the range.
   */
  offset?: number;
}

function problemOf(error: unknown): HeadProblem {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'absent';
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'Error';
}

// One buffer for every read (grown on demand): a sweep over thousands of files would otherwise
// allocate, and zero, a fresh one each time. Callers get a copy of just the bytes read.
let shared = Buffer.allocUnsafe(0);

function sharedBuffer(size: number): Buffer {
  if (shared.length < size) shared = Buffer.allocUnsafe(Math.max(size, 2 * shared.length));
  return shared;
}

/** The shared buffer grown to at least `size`, keeping its first `keep` bytes. */
function growShared(size: number, keep: number): Buffer {
  const old = shared;
  if (old.length >= size) return old;
  shared = Buffer.allocUnsafe(Math.max(size, 2 * old.length));
  old.copy(shared, 0, 0, keep);
  return shared;
}

/** The first buffer for a read: what fstat says is there, plus room to notice growth. */
const READ_SLACK_BYTES = 64 * 1024;

export type RegularFileOpen = { ok: true; fd: number; size: number } | { ok: false; problem: HeadProblem };

/**
 * Open a regular file for reading without ever blocking or throwing, as `readHead` does: the
 * path is stat'ed, opened read-only with O_NONBLOCK and O_NOCTTY, and fstat'ed; anything but a
 * regular file is refused (its descriptor closed), so a FIFO or a device costs no wait and no
 * side effect. On success the caller owns `fd` and closes it; `size` is fstat's.
 */
export function openRegularFile(path: PathLike): RegularFileOpen {
  try {
    // A missing file is common (a sweep over thousands of units): answered without an Error.
    const stats = statSync(path, { throwIfNoEntry: false });
    if (stats === undefined) return { ok: false, problem: 'absent' };
    if (!stats.isFile()) return { ok: false, problem: 'NotARegularFile' };
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  try {
    const opened = fstatSync(fd);
    if (opened.isFile()) return { ok: true, fd, size: opened.size };
    closeSync(fd);
    return { ok: false, problem: 'NotARegularFile' };
  } catch (error) {
    closeSync(fd);
    return { ok: false, problem: problemOf(error) };
  }
}

/**
 * Read the first bytes of a regular file (or those from `offset` on) without ever blocking or throwing. The path is
 * stat'ed, opened read-only with O_NONBLOCK and O_NOCTTY, and fstat'ed: anything but a regular
 * file is refused, so a FIFO or a device costs no wait and no side effect.
 */
export function readHead(path: PathLike, options: ReadHeadOptions): HeadRead {
  const read = readHeadShared(path, options);
  if (!read.ok) return read;
  const bytes = Buffer.from(read.buffer.subarray(0, read.length));
  return { ok: true, bytes, text: bytes.toString('utf8'), truncated: read.truncated };
}

export type HeadTextRead = { ok: true; text: string; truncated: boolean } | { ok: false; problem: HeadProblem };

/**
 * `readHead` for a caller that needs only the text: the same checks and system calls, decoded
 * straight from the shared buffer, without the copy of the bytes (a sweep over thousands of
 * small files spends a few microseconds a file on that copy and its garbage).
 */
export function readHeadText(path: PathLike, options: ReadHeadOptions): HeadTextRead {
  const read = readHeadShared(path, options);
  if (!read.ok) return read;
  return { ok: true, text: read.buffer.toString('utf8', 0, read.length), truncated: read.truncated };
}

export type HeadSharedRead = { ok: true; buffer: Buffer; length: number; truncated: boolean } | { ok: false; problem: HeadProblem };

/**
 * readHead's work for a caller that looks at the bytes itself (report-state's sweep: 10,000 small
 * entries, each trimmed and decoded from the buffer): the same checks and system calls, and the
 * first `length` bytes of `buffer` are the file's. The buffer is kit's own, shared by every read
 * here, so it (and the answer object, reused) is valid only until the next readHead, readHeadText
 * or readHeadShared call: copy what must be kept.
 */
export function readHeadShared(path: PathLike, options: ReadHeadOptions): HeadSharedRead {
  // openRegularFile's checks, written out: a sweep calls this 10,000 times, and a result object per
  // layer (and per call: the answer below is reused) is most of what it would cost over the calls.
  let stats: Stats | undefined;
  try {
    // A missing file is common (a sweep over thousands of units): answered without an Error.
    stats = statSync(path, NO_THROW);
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  if (stats === undefined) return ABSENT;
  if (!stats.isFile()) return NOT_REGULAR;
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isFile()) return NOT_REGULAR;
    const { maxBytes } = options;
    const offset = options.offset ?? 0;
    const size = opened.size - offset;
    // One byte more than allowed tells a file of exactly maxBytes from a longer one.
    const want = maxBytes + 1;
    // Sized to the file, not to the bound, and grown while the file turns out longer: a bound of
    // 256 MiB must not allocate 256 MiB (V8 answers that much external memory with a full GC).
    let buffer = sharedBuffer(Math.min(want, Math.max(0, size) + READ_SLACK_BYTES));
    let length = 0;
    while (length < want) {
      if (length === buffer.length) buffer = growShared(Math.min(want, 2 * buffer.length), length);
      const n = readSync(fd, buffer, length, Math.min(want, buffer.length) - length, offset + length);
      if (n === 0) break;
      length += n;
      // A read that brings the range to the size fstat gave has read it all: a regular file needs
      // no read answering 0 to say so (one system call a file fewer). A file that grew meanwhile
      // gives more than that size and is read on to its end; one that reports no size, as procfs
      // files do, is read until a read answers 0.
      if (length === size) break;
    }
    const truncated = length > maxBytes;
    if (truncated && options.overflow === 'refuse') return TOO_LARGE;
    SHARED_READ.buffer = buffer;
    SHARED_READ.length = truncated ? maxBytes : length;
    SHARED_READ.truncated = truncated;
    return SHARED_READ;
  } catch (error) {
    return { ok: false, problem: problemOf(error) };
  } finally {
    closeSync(fd);
  }
}

const NO_THROW = { throwIfNoEntry: false } as const;
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const ABSENT: HeadSharedRead = Object.freeze({ ok: false, problem: 'absent' });
const NOT_REGULAR: HeadSharedRead = Object.freeze({ ok: false, problem: 'NotARegularFile' });
const TOO_LARGE: HeadSharedRead = Object.freeze({ ok: false, problem: 'EntryTooLarge' });
/** readHeadShared's answer, reused: like the buffer it names, valid until the next read here. */
const SHARED_READ: { ok: true; buffer: Buffer; length: number; truncated: boolean } = { ok: true, buffer: shared, length: 0, truncated: false };

// --- which --------------------------------------------------------------------------------------

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface WhichOptions {
  /** The environment whose PATH is searched (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** What an empty or relative PATH entry is relative to (default `process.cwd()`). */
  cwd?: string;
  /** Return the real path, symlinks resolved (default false). */
  realpath?: boolean;
}

/**
 * Python `shutil.which` on POSIX: the first executable regular file named `name` on PATH, or
 * null. A name with a `/` is checked as a path itself. An unset PATH searches `/bin:/usr/bin`
 * (Python's fallback), an empty PATH finds nothing, an empty entry inside PATH is the cwd.
 */
export function which(name: string, options: WhichOptions = {}): string | null {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const finish = (found: string): string | null => {
    if (!options.realpath) return found;
    try {
      return realpathSync(found);
    } catch {
      return null;
    }
  };
  if (name === '') return null;
  if (name.includes('/')) {
    const path = resolvePath(cwd, name);
    return isExecutableFile(path) ? finish(path) : null;
  }
  const searchPath = env.PATH ?? '/bin:/usr/bin';
  if (searchPath === '') return null;
  for (const dir of searchPath.split(delimiter)) {
    const candidate = resolvePath(cwd, dir === '' ? '.' : dir, name);
    if (isExecutableFile(candidate)) return finish(candidate);
  }
  return null;
}

// --- what a path is ---------------------------------------------------------------------------

/**
 * Why a call on a path failed, in the lower-case words a message puts in brackets: strerror(3)'s
 * text for its error code (`EACCES`: `permission denied`, `ELOOP`: `too many levels of symbolic
 * links`), else the code itself, else the error's message.
 */
export function errorWords(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string') return error instanceof Error ? error.message : String(error);
  const text = strerror(code);
  return text === undefined ? code : text.charAt(0).toLowerCase() + text.slice(1);
}

/** Python `os.path.isdir`: a directory, a symbolic link to one counts; false on any error. */
export function isDirectory(path: PathLike): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Python `os.path.isfile`: a regular file, a symbolic link to one counts; false on any error. */
export function isRegularFile(path: PathLike): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

// --- the parent-death signal -------------------------------------------------------------------

/**
 * `command` started under the kernel's parent-death signal (util-linux `setpriv --pdeathsig`):
 * when the process that starts it dies, any way (kill -9, out of memory), the kernel sends the
 * command `signal`, so it cannot outlive its host. setpriv execs the command (the same pid), and
 * the signal survives that exec. For a caller that has found `setpriv --pdeathsig` working here
 * (dispatcher-agy's launch plan probes it once); everything the dispatcher starts goes through
 * this one spelling.
 */
export function underParentDeath(command: readonly string[], signal: 'KILL' | 'TERM' = 'KILL'): string[] {
  return ['setpriv', '--pdeathsig', signal, '--', ...command];
}

// --- flock ------------------------------------------------------------------------------------

export { type FlockAttempt, FlockUnavailableError, sleepSync, tryFlock, tryFlockSharedMany } from './flock.js';
