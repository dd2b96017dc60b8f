// `--batch DIR`: the state directories one batch recorded in its ledger, read through the
// ledger's own home (@prun/unit-state/ledger). Loaded only with --batch: the reader loads zod.
import { dirname, join, resolve } from 'node:path';
import { BATCH_FILES, batchDirProblem, notABatchDirectory, LedgerError, readLedger, recordedStateDirs, resolveBatchDir } from '@prun/unit-state/ledger';
import { CliError, EXIT_USAGE } from '@prun/kit/cli';

export interface BatchScope {
  /** The batch directory, absolute. */
  dir: string;
  /** Every state directory the batch's ledger names (absolute, as recorded). */
  stateDirs: Set<string>;
  /** Their parent directories, each once, in the order first recorded: the roots to list. */
  roots: string[];
  /** Ledger lines that are not valid entries (their state dirs, if any, are not listed). */
  badLines: number[];
}

/**
 * The state dirs a batch recorded. A batch directory holds both plan.json and the ledger (prun
 * publishes it whole); anything else, or a ledger that cannot be read at all, is a usage error
 * (exit 2).
 */
export function batchScope(dirArg: string, cwd: string): BatchScope {
  let dir: string;
  try {
    dir = resolveBatchDir(dirArg, cwd);
  } catch (error) {
    throw new CliError(`--batch: ${(error as Error).message}`, { exitCode: EXIT_USAGE });
  }
  const ledgerPath = join(dir, BATCH_FILES.ledger);
  const problem = batchDirProblem(dir);
  if (problem !== null) throw new CliError(`--batch: ${notABatchDirectory(dir, problem)}`, { exitCode: EXIT_USAGE });
  let read;
  try {
    read = readLedger(ledgerPath);
  } catch (error) {
    if (error instanceof LedgerError) throw new CliError(`--batch: ${error.message}`, { exitCode: EXIT_USAGE });
    throw error;
  }
  const stateDirs = new Set<string>();
  const roots: string[] = [];
  for (const { stateDir } of recordedStateDirs(read)) {
    // The dispatcher records an absolute path; anything else is not one of its state dirs.
    if (!stateDir.startsWith('/')) continue;
    const normalized = resolve(stateDir);
    stateDirs.add(normalized);
    const root = dirname(normalized);
    if (!roots.includes(root)) roots.push(root);
  }
  return { dir, stateDirs, roots, badLines: read.badLines };
}
