import { constants } from 'node:os';
import { CliError, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE } from '@prun/kit/cli';

/** The documented exit codes of `prun-snapshot-tail` (the upstream `prun_state` codes, plus 70). */
export const EXIT = {
  ok: EXIT_OK,
  usage: EXIT_USAGE,
  collision: 3,
  source: 4,
  archive: 5,
  publish: 6,
  internal: EXIT_INTERNAL,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * A known failure: printed as one `error: <message>` line (the upstream form), exits with
 * `code`. It is kit's CliError, so any host that handles those handles it.
 */
export class SnapshotError extends CliError {
  constructor(
    readonly code: ExitCode,
    message: string,
  ) {
    super(message, { exitCode: code });
    this.name = 'SnapshotError';
  }
}

export function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string';
}

// glibc's strerror texts: the upstream messages quote Python's OSError, which uses them, so
// `cannot open <p>: [Errno 2] No such file or directory: '<p>'` reads the same here.
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  ENXIO: 'No such device or address',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  ENFILE: 'Too many open files in system',
  EMFILE: 'Too many open files',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EMLINK: 'Too many links',
  ENAMETOOLONG: 'File name too long',
  ELOOP: 'Too many levels of symbolic links',
  ENOTSUP: 'Operation not supported',
  EOPNOTSUPP: 'Operation not supported',
  EDQUOT: 'Disk quota exceeded',
};

function quotePath(path: string): string {
  return `'${path.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/**
 * The text Python prints for an OSError: `[Errno 2] No such file or directory: '/p'` (and
 * `'/a' -> '/b'` for two-path calls such as link). Errors without an errno give their message.
 */
export function osErrorText(error: unknown): string {
  if (!isErrnoException(error)) return error instanceof Error ? error.message : String(error);
  const code = error.code ?? '';
  const number = (constants.errno as Record<string, number>)[code] ?? Math.abs(error.errno ?? 0);
  const text = STRERROR[code] ?? error.message.replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*$/, '');
  let paths = '';
  if (typeof error.path === 'string') paths = `: ${quotePath(error.path)}`;
  const dest = (error as { dest?: unknown }).dest;
  if (typeof error.path === 'string' && typeof dest === 'string') paths += ` -> ${quotePath(dest)}`;
  return `[Errno ${number}] ${text}${paths}`;
}
