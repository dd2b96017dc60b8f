// One unit's dispatch run inside the supervisor process, through @prun/dispatcher-agy's library
// entry: the same code the `prun-dispatch-agy` bin runs, with the unit's own environment, its
// output going to the unit's log files, and a stop that reaches this unit alone.
import { dispatch } from '@prun/dispatcher-agy';

export interface HostedIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export interface HostedDispatch {
  /** The dispatch's exit code, as the bin would have exited; never rejects. */
  done: Promise<number>;
  /**
   * Stop this unit as a signal to its dispatcher would (the first stops the worker group and
   * publishes a FALLBACK naming the signal, a second kills the group at once; after publication
   * nothing changes). Returns false when this dispatcher library can only be stopped by a signal
   * to the whole process.
   */
  stop: (signal: NodeJS.Signals) => boolean;
}

/**
 * Start one dispatch in this process. The working directory of every hosted unit is the batch
 * directory, which is the supervisor's own (the dispatcher resolves its paths against it, as
 * it did when prun started it there as a process).
 */
export function startDispatch(argv: readonly string[], io: HostedIo): HostedDispatch {
  // Each dispatch listens for SIGINT, SIGTERM and SIGHUP on the process itself: a signal to the
  // supervisor reaches every unit it hosts, as a signal to each dispatcher process did.
  const done = dispatch(argv, { env: io.env, stdout: io.stdout, stderr: io.stderr, help: () => '', version: () => '' }).catch((error: unknown) => {
    io.stderr(`dispatch-task-agy: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 70;
  });
  return { done, stop: () => false };
}
