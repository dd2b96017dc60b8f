export const EXIT_OK = 0;
export const EXIT_FAIL = 1;
export const EXIT_STILL_RUNNING = 2;
export const EXIT_USAGE = 64;
export const EXIT_INTERNAL = 70;

export const NOT_RUNNING = 'job is not running; use resume';

/** A failure the user can act on: one message line and a documented exit code. */
export class CommandError extends Error {
  readonly code: number;
  constructor(message: string, code: number = EXIT_FAIL) {
    super(message);
    this.name = 'CommandError';
    this.code = code;
  }
}

export class NotRunningError extends CommandError {
  constructor() {
    super(NOT_RUNNING);
    this.name = 'NotRunningError';
  }
}

export function usageError(message: string): CommandError {
  return new CommandError(message, EXIT_USAGE);
}
