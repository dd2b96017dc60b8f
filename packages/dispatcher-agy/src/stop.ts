/**
 * How a caller stops a unit that `runUnit` runs in its own process (README, "Library: running
 * units in-process"). The bin maps SIGTERM, SIGINT and SIGHUP onto one of these; a host such
 * as a batch supervisor keeps one per unit. Plain data and listeners: no process state.
 */

import { STOP_SIGNALS, type StopSignal } from '@prun/kit/cli';

/** The signals a dispatcher treats as "stop" (kit's one list): the unit ends as if the bin had received one. */
export type UnitStopSignal = StopSignal;

/** One request: stop as if `signal` had arrived, or kill the worker tree now. */
export type StopRequest = { kind: 'stop'; signal: UnitStopSignal } | { kind: 'kill' };

/** What `runUnit` listens to: every request, in order, including those made before it listened. */
export interface UnitStopSource {
  /** Calls `listener` for each request (first the earlier ones); returns the unsubscribe. */
  subscribe(listener: (request: StopRequest) => void): () => void;
}

const STOP_SIGNAL_NAMES: ReadonlySet<string> = new Set(STOP_SIGNALS);

export function isUnitStopSignal(value: unknown): value is UnitStopSignal {
  return typeof value === 'string' && STOP_SIGNAL_NAMES.has(value);
}

/**
 * The stop source of one unit. `stop(signal)` is what the bin does when that signal arrives
 * (a second one while the worker runs means "kill now"); `kill()` is the bin's "kill now"
 * (what its grace timer or a second signal does: SIGKILL to the worker's whole tree, SIGUSR2
 * to the keeper that finds the processes which left agy's group). Requests made before the
 * unit listens are kept and delivered when it does.
 */
export class UnitStopper implements UnitStopSource {
  private readonly requests: StopRequest[] = [];
  private readonly listeners = new Set<(request: StopRequest) => void>();

  stop(signal: UnitStopSignal = 'SIGTERM'): void {
    this.send({ kind: 'stop', signal });
  }

  kill(): void {
    this.send({ kind: 'kill' });
  }

  /** True once any request was made. */
  get requested(): boolean {
    return this.requests.length > 0;
  }

  subscribe(listener: (request: StopRequest) => void): () => void {
    this.listeners.add(listener);
    for (const request of [...this.requests]) {
      if (!this.listeners.has(listener)) break;
      listener(request);
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  private send(request: StopRequest): void {
    this.requests.push(request);
    for (const listener of [...this.listeners]) listener(request);
  }
}

/**
 * An AbortSignal as a stop source: aborting it is one request, chosen by its reason: a stop
 * signal's name stops as that signal would, `'SIGKILL'` or `'kill'` kills now, anything else
 * (the default AbortError included) stops as SIGTERM would.
 */
export function stopSourceFromAbortSignal(signal: AbortSignal): UnitStopSource {
  return {
    subscribe(listener) {
      const deliver = (): void => {
        const reason: unknown = signal.reason;
        if (reason === 'SIGKILL' || reason === 'kill') listener({ kind: 'kill' });
        else listener({ kind: 'stop', signal: isUnitStopSignal(reason) ? reason : 'SIGTERM' });
      };
      if (signal.aborted) {
        deliver();
        return () => undefined;
      }
      signal.addEventListener('abort', deliver, { once: true });
      return () => signal.removeEventListener('abort', deliver);
    },
  };
}

/** Either form a caller may pass to `runUnit`. */
export function toStopSource(stop: UnitStopSource | AbortSignal | undefined): UnitStopSource | null {
  if (stop === undefined) return null;
  if (typeof (stop as UnitStopSource).subscribe === 'function') return stop as UnitStopSource;
  return stopSourceFromAbortSignal(stop as AbortSignal);
}
