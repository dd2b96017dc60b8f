// The folders of supervisors that have exited, once no running unit names them: their records
// have been read into the ledger, so nothing will ask them again.
import { readdirSync, rmSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { supervisorAlive } from './alive.js';
import { parseSupervisorName, supervisorsRoot } from './records.js';

/**
 * Remove every `supervisors/<pid>-<start>` whose process is gone and that no `running` ledger
 * line still names (`inUse`: `<pid>-<start>` names; such a unit's record tells a later resume
 * its exit code); the shared log stays unless it is empty, and the folder goes when nothing is
 * left in it.
 */
export function removeDeadSupervisors(batchDir: string, inUse: ReadonlySet<string>): void {
  const root = supervisorsRoot(batchDir);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const who = parseSupervisorName(name);
    if (who !== null && !inUse.has(name) && !supervisorAlive(who)) rmSync(join(root, name), { recursive: true, force: true });
  }
  const log = join(root, 'log');
  if (statSync(log, { throwIfNoEntry: false })?.size === 0) rmSync(log, { force: true });
  try {
    rmdirSync(root);
  } catch {
    // not empty: a live supervisor, or a log with something in it
  }
}
