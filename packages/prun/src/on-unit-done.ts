// `prun batch --on-unit-done CMD`: CMD runs through the shell (`/bin/sh -c`) after each unit
// settles, one hook at a time in the order units settle, with the unit in its environment. Its
// stdout and stderr both go to prun's stderr, so prun's stdout (the summary table or JSON) stays
// exactly what it documents; a hook that fails or cannot start is one line on stderr and never
// stops the batch. The batch waits for the last hook before it prints its summary.
import { spawn } from 'node:child_process';
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

export interface UnitDoneHook {
  /** Queue the hook for a unit that has settled. */
  run: (entry: LedgerEntry) => void;
  /** Resolves once every queued hook has ended. */
  drained: () => Promise<void>;
}

export function unitDoneHook(command: string, options: { env: NodeJS.ProcessEnv; cwd: string; batchDir: string; message: (line: string) => void }): UnitDoneHook {
  let chain: Promise<void> = Promise.resolve();
  const runOne = (entry: LedgerEntry): Promise<void> =>
    new Promise((resolveRun) => {
      let ended = false;
      const end = (problem: string | null): void => {
        if (ended) return;
        ended = true;
        if (problem !== null) options.message(`--on-unit-done for unit ${entry.id} (${entry.status}) ${problem}; the batch goes on`);
        resolveRun();
      };
      const child = spawn('/bin/sh', ['-c', command], {
        cwd: options.cwd,
        env: hookEnv(options.env, entry, options.batchDir),
        // Never prun's stdout: the hook's output goes to stderr with prun's own messages.
        stdio: ['ignore', 2, 2],
      });
      child.on('error', (error) => end(`could not start: ${error.message}`));
      child.on('exit', (code, signal) => end(code === 0 ? null : signal ? `was killed by ${signal}` : `exited with code ${code}`));
    });
  return {
    run: (entry) => {
      const snapshot = { ...entry };
      chain = chain.then(() => runOne(snapshot));
    },
    drained: () => chain,
  };
}
