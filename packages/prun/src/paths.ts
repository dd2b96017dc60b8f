import { join, resolve } from 'node:path';
import { BATCH_FILES, batchDirProblem, notABatchDirectory } from '@prun/unit-state/ledger';
import { BatchError, EXIT } from './errors.js';
import { LOCK_FILE } from './lock.js';

/** The files and folders of a batch directory, all absolute whatever the caller's cwd. */
export function batchPaths(dir: string) {
  const root = resolve(dir);
  return {
    dir: root,
    plan: join(root, BATCH_FILES.plan),
    ledger: join(root, BATCH_FILES.ledger),
    lock: join(root, LOCK_FILE),
    prompts: join(root, 'prompts'),
    results: join(root, 'results'),
    clones: join(root, 'clones'),
    logs: join(root, 'logs'),
    prompt: (id: string) => join(root, 'prompts', `${id}.md`),
    /** The prompt of a follow-up turn that asks an `invalid` unit to restate its result. */
    restatePrompt: (id: string) => join(root, 'prompts', `${id}.restate.md`),
    result: (id: string) => join(root, 'results', `${id}.md`),
    clone: (id: string) => join(root, 'clones', id),
    stdoutLog: (id: string) => join(root, 'logs', `${id}.stdout`),
    stderrLog: (id: string) => join(root, 'logs', `${id}.stderr`),
  };
}
export type BatchPaths = ReturnType<typeof batchPaths>;

/**
 * Refuses (exit 2) a directory that is not a batch, in the wording every command uses: `not a
 * batch directory (WHY): DIR`, WHY from unit-state's batchDirProblem (no such directory, not a
 * directory, no plan.json, ...). A missing ledger is the ledger rules' to judge (a lost one beside
 * results is exit 102), except where the caller asks for it (`clean`, which refuses it here).
 */
export function refuseNonBatchDir(dir: string, { ledger = false }: { ledger?: boolean } = {}): void {
  const problem = batchDirProblem(dir, { ledger });
  if (problem !== null) throw new BatchError(notABatchDirectory(dir, problem), EXIT.usage);
}
