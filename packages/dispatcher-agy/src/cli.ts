// First, so that its top level runs before the rest of the command: the bin's early start of
// its isolated chain (a no-op unless bin.ts marked the process as the bin).
import './early.js';
import { STOP_SIGNALS, closeDebuggerDoor, packageVersion } from '@prun/kit/cli';
import { helpText } from './help.js';
import { UnitStopper } from './stop.js';

const MANIFEST = new URL('../package.json', import.meta.url);

/**
 * Signals whose default action ends the process and that Node lets a listener catch, besides
 * the stop signals; once the outcome is final they are ignored too. SIGUSR1 belongs to the
 * inspector guard, and faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) keep their defaults.
 */
const LATE_IGNORED_SIGNALS: readonly NodeJS.Signals[] = [
  'SIGQUIT',
  'SIGUSR2',
  'SIGALRM',
  'SIGVTALRM',
  'SIGPROF',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGPOLL',
  'SIGPWR',
  'SIGSTKFLT',
  'SIGTRAP',
  'SIGSYS',
];

/**
 * The process half of the bin: real signals become the unit's stop requests, and the few
 * things only a process owner may do (die of a signal, ignore late ones) happen here.
 */
class BinSignals {
  readonly stopper = new UnitStopper();
  private readonly handlers = new Map<NodeJS.Signals, () => void>();
  held = false;

  install(): void {
    for (const signal of STOP_SIGNALS) this.listen(signal, () => this.stopper.stop(signal));
  }

  /** Nothing exists yet: give the signal its default action back and send it again (no process.exit). */
  dieOf(signal: NodeJS.Signals): void {
    this.remove();
    process.kill(process.pid, signal);
  }

  /**
   * From now on every catchable signal whose default action ends the process is ignored (the
   * stop signals already are, by the unit's phase), so the exit code is the outcome. The
   * handlers stay until the process exits: removing one would restore the default action.
   */
  hold(): void {
    this.held = true;
    for (const signal of LATE_IGNORED_SIGNALS) {
      if (this.handlers.has(signal)) continue;
      try {
        this.listen(signal, () => undefined);
      } catch {
        // A signal this platform does not have.
      }
    }
  }

  remove(): void {
    for (const [signal, handler] of this.handlers) process.off(signal, handler);
    this.handlers.clear();
  }

  private listen(signal: NodeJS.Signals, handler: () => void): void {
    process.on(signal, handler);
    this.handlers.set(signal, handler);
  }
}

/**
 * Loads what main loads lazily (the command, run.js) without running anything. main imports it on
 * first use; a host that must read every module before it gives up root calls this first
 * (tools/main-as-nobody.mjs: a checkout nobody cannot read, such as a 0700 `mktemp -d` clone).
 * Node caches the resolution per importing module, so only an import made here counts.
 */
export function preload(): Promise<typeof import('./run.js')> {
  return import('./run.js');
}

/**
 * The bin's command, run by @prun/kit/cli's runBin (the one top-level catch, the SIGUSR1
 * debugger door, the EPIPE policy) from the shim or from `prun dispatch`: a thin shell over
 * the library's `runUnit` (run.ts) that maps SIGTERM/SIGINT/SIGHUP onto its stop source. It
 * sets the exit code and never ends the process itself: the shim passes runBin `exitWhenDone`
 * (and this module says so in `exitWhenDone` below), because leaving by the end of the event
 * loop would close the signal handlers during Node's teardown and give a signal arriving then
 * its default action (death by 128+n after the result is published).
 */
export async function main(argv: string[]): Promise<void> {
  // Also when main is called without runBin (tools/main-as-nobody.mjs): SIGUSR1 would open an
  // inspector in the process that holds the unscrubbed environment. Idempotent.
  closeDebuggerDoor();
  const signals = new BinSignals();
  signals.install();
  const { runDispatch } = await preload();
  const code = await runDispatch(
    {
      argv,
      cwd: '',
      env: process.env,
      stdout: (text) => process.stdout.write(text),
      stderr: (text) => process.stderr.write(text),
      stop: signals.stopper,
    },
    {
      cwd: () => process.cwd(),
      help: helpText,
      version: () => packageVersion(MANIFEST),
      dieOf: (signal) => signals.dieOf(signal),
      holdSignals: () => signals.hold(),
    },
  );
  // Before STATE-DIR nothing exists, so signals get their default action back; after it the
  // outcome is final and the handlers stay, ignoring whatever arrives, until the process exits.
  if (!signals.held) signals.remove();
  // Set, not only returned: `prun dispatch` hosts this main and reads process.exitCode.
  process.exitCode = code;
}

/** Read by runBin (kit): the process must end as soon as main resolves; see main above. */
export const exitWhenDone = true;
