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
  /** (message, exit code), the order of every CliError subclass in the workspace. */
  constructor(
    message: string,
    readonly code: ExitCode,
  ) {
    super(message, { exitCode: code });
    this.name = 'SnapshotError';
  }
}

export function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string';
}

// The text Python prints for an OSError (`[Errno 2] No such file or directory: '/p'`), which the
// upstream messages quote; its home is @prun/kit/py.
export { pyOsErrorText as osErrorText } from '@prun/kit/py';
