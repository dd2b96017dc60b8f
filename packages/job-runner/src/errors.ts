// job-runner's exit codes (those of multi_agent.py: usage is 64 there, not the kit's 2) and its
// error type, which is the kit's CliError so that every prun bin reports errors the same way.
import { CliError, EXIT_INTERNAL } from '@prun/kit/cli';

export { EXIT_INTERNAL };
export const EXIT_OK = 0;
export const EXIT_FAIL = 1;
export const EXIT_STILL_RUNNING = 2;
export const EXIT_USAGE = 64;

export const NOT_RUNNING = 'job is not running; use resume';

/** A failure the user can act on: one message line and a documented exit code (default 1). */
export class CommandError extends CliError {
  constructor(message: string, code: number = EXIT_FAIL, hint?: string) {
    super(message, hint === undefined ? { exitCode: code } : { exitCode: code, hint });
    this.name = 'CommandError';
  }

  get code(): number {
    return this.exitCode;
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
