// The C library's words for an errno code, as strerror(3) gives them on Linux (glibc). One home:
// kit/py prints them as Python's OSError does, and messages that name why a path could not be
// looked at (`not a batch directory (permission denied)`) take them lower-cased from kit/fs.

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
  ENOTEMPTY: 'Directory not empty',
};

/** strerror(3)'s text for a Node error code (`EACCES`: `Permission denied`), or undefined for one not listed. */
export function strerror(code: string): string | undefined {
  return Object.hasOwn(STRERROR, code) ? STRERROR[code] : undefined;
}
