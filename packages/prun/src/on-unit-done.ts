// `prun batch --on-unit-done CMD`: CMD runs through the shell (`/bin/sh -c`) after each unit
// settles, one hook at a time in the order units settle, with the unit in its environment. Its
// stdout and stderr both go to prun's stderr, so prun's stdout (the summary table or JSON) stays
// exactly what it documents; a hook that fails or cannot start is one line on stderr and never
// stops the batch. The batch waits for the last hook before it prints its summary, so a hook's
// run is bounded (HOOK_TIMEOUT_SETTING) and a signal to prun stops it and starts no other.
import { spawn, type ChildProcess } from 'node:child_process';
import type { LedgerEntry } from './ledger.js';

/** The variables a hook gets, beside the batch's own environment. */
export const HOOK_ENV = {
  unitId: 'PRUN_UNIT_ID',
  status: 'PRUN_UNIT_STATUS',
  /** The absolute path of the unit's result file (a FALLBACK for a unit that failed). */
  result: 'PRUN_UNIT_RESULT',
  /** The unit's state directory; empty when no dispatch made one. */
  stateDir: 'PRUN_UNIT_STATE_DIR',
  /** The dispatcher's exit code; empty when none was seen. */
  exitCode: 'PRUN_UNIT_EXIT_CODE',
  attempt: 'PRUN_UNIT_ATTEMPT',
  batchDir: 'PRUN_BATCH_DIR',
} as const;

/** The environment of one hook run: pure. */
export function hookEnv(base: NodeJS.ProcessEnv, entry: LedgerEntry, batchDir: string): NodeJS.ProcessEnv {
  return {
    ...base,
    [HOOK_ENV.unitId]: entry.id,
    [HOOK_ENV.status]: entry.status,
    [HOOK_ENV.result]: entry.result_file,
    [HOOK_ENV.stateDir]: entry.state_dir ?? '',
    [HOOK_ENV.exitCode]: entry.exit_code === null ? '' : String(entry.exit_code),
    [HOOK_ENV.attempt]: String(entry.attempt ?? 0),
    [HOOK_ENV.batchDir]: batchDir,
  };
}

/**
 * How long one hook may run, in seconds (0: no limit). A hook past it is stopped like one
 * interrupted (SIGTERM to its process group, SIGKILL after HOOK_KILL_GRACE_MS), so a notifier
 * that hangs cannot keep the batch from ending.
 */
export const HOOK_TIMEOUT_SETTING = ['PRUN_ON_UNIT_DONE_TIMEOUT', 300] as const;

/** After a hook's group is signalled, how long before it is killed outright. */
export const HOOK_KILL_GRACE_MS = 5_000;

export interface UnitDoneHook {
  /** Queue the hook for a unit that has settled. */
  run: (entry: LedgerEntry) => void;
  /** Resolves once every queued hook has ended (or, after stop(), been skipped). */
  drained: () => Promise<void>;
  /**
   * prun is stopping (a signal): start no further hook and pass the signal to the running
   * hook's process group, SIGKILL after HOOK_KILL_GRACE_MS or at once on a repeated stop.
   */
  stop: (signal: NodeJS.Signals) => void;
  /** The signal stop() was first given, or null. */
  stoppedBy: () => NodeJS.Signals | null;
}

/** Signal a hook's whole process group (it leads its own); gone already is fine. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group has ended.
  }
}

export function unitDoneHook(
  command: string,
  options: { env: NodeJS.ProcessEnv; cwd: string; batchDir: string; timeoutS: number; message: (line: string) => void },
): UnitDoneHook {
  let chain: Promise<void> = Promise.resolve();
  let stoppedBy: NodeJS.Signals | null = null;
  const skipped: string[] = [];
  /** The running hook's "stop it" lever, or null between hooks. */
  let stopCurrent: ((signal: NodeJS.Signals) => void) | null = null;
  const runOne = (entry: LedgerEntry): Promise<void> =>
    new Promise((resolveRun) => {
      if (stoppedBy !== null) {
        skipped.push(entry.id);
        resolveRun();
        return;
      }
      const timers: NodeJS.Timeout[] = [];
      let why: string | null = null;
      let ended = false;
      const end = (problem: string | null): void => {
        if (ended) return;
        ended = true;
        stopCurrent = null;
        for (const timer of timers) clearTimeout(timer);
        // Stopped by prun: whatever the hook left running in its group goes with it.
        if (why !== null) signalGroup(child, 'SIGKILL');
        if (why !== null) options.message(`--on-unit-done for unit ${entry.id} (${entry.status}) ${why}`);
        else if (problem !== null) options.message(`--on-unit-done for unit ${entry.id} (${entry.status}) ${problem}; the batch goes on`);
        resolveRun();
      };
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: options.cwd,
        env: hookEnv(options.env, entry, options.batchDir),
        // Never prun's stdout: the hook's output goes to stderr with prun's own messages.
        stdio: ['ignore', 2, 2],
        // Its own process group, so that stopping it reaches everything it started.
        detached: true,
      });
      const halt = (signal: NodeJS.Signals, reason: string): void => {
        const repeated = why !== null;
        why ??= reason;
        signalGroup(child, repeated ? 'SIGKILL' : signal);
        if (!repeated) timers.push(setTimeout(() => signalGroup(child, 'SIGKILL'), HOOK_KILL_GRACE_MS));
      };
      stopCurrent = (signal) => halt(signal, `was stopped: prun received ${signal}`);
      if (options.timeoutS > 0) {
        timers.push(
          setTimeout(
            () => halt('SIGTERM', `ran past its ${options.timeoutS} s limit (${HOOK_TIMEOUT_SETTING[0]}) and was stopped; the batch goes on`),
            options.timeoutS * 1000,
          ),
        );
      }
      child.on('error', (error) => end(`could not start: ${error.message}`));
      child.on('exit', (code, signal) => end(code === 0 ? null : signal ? `was killed by ${signal}` : `exited with code ${code}`));
    });
  return {
    run: (entry) => {
      const snapshot = { ...entry };
      chain = chain.then(() => runOne(snapshot));
    },
    drained: async () => {
      await chain;
      if (skipped.length > 0) {
        options.message(`--on-unit-done not run for ${skipped.length} unit(s) settled after prun received ${stoppedBy}: ${skipped.splice(0).join(', ')}`);
      }
    },
    stop: (signal) => {
      stoppedBy ??= signal;
      stopCurrent?.(signal);
    },
    stoppedBy: () => stoppedBy,
  };
}
