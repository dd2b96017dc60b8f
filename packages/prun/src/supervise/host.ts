// One unit's dispatch run inside the supervisor process, through @prun/dispatcher-agy's library
// entry `runUnit`: the same code the `prun-dispatch-agy` bin runs, with the unit's own working
// directory and environment, its output going to the unit's log files, and a stop of its own.
import { runUnit, UnitStopper, type ChainReserve } from '@prun/dispatcher-agy';
import { EXIT_INTERNAL, type StopSignal } from '@prun/kit/cli';

export interface HostedIo {
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The supervisor's parked chains, shared by the units it runs (the dispatcher's ChainReserve). */
  chains: ChainReserve;
  /** Called once when the unit's worker has exited, before its outcome is published. */
  onWorkerExit: () => void;
}

export interface HostedDispatch {
  /** The dispatch's exit code, as the bin would have exited; never rejects. */
  done: Promise<number>;
  /**
   * Stop this unit as that signal to its own dispatcher process would: the first stops the
   * worker group and publishes a FALLBACK naming the signal, a second kills the group at once;
   * after the worker has exited nothing changes.
   */
  stop: (signal: StopSignal) => void;
}

/** Start one dispatch in this process. */
export function startDispatch(argv: readonly string[], io: HostedIo): HostedDispatch {
  const stopper = new UnitStopper();
  const done = runUnit({ argv, cwd: io.cwd, env: io.env, stdout: io.stdout, stderr: io.stderr, stop: stopper, chains: io.chains, onWorkerExit: io.onWorkerExit }).catch((error: unknown) => {
    // runUnit never rejects; should it, the unit ends as an internal error, not the supervisor.
    io.stderr(`dispatch-task-agy: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_INTERNAL;
  });
  return { done, stop: (signal) => stopper.stop(signal) };
}
