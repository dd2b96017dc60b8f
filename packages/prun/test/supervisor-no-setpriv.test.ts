// A batch's supervisor hosts its units in-process through the dispatcher library, so each
// worker's launch chain is its child. With perl but neither setpriv nor unshare on PATH
// (review17: nothing armed the parent-death signal, and a kill -9 of the supervisor left every
// keeper and worker tree running), the keeper arms the signal itself: a kill -9 of the
// supervisor still ends the keeper, agy and agy's descendants. They are found by their working
// directory, which every one of them has in the sandbox's TMPDIR (the unit's state directory),
// and which neither the driver nor the supervisor has.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handedOver, latestStatus, ledger, planUnit, processesUnder, prun, sandbox, waitFor, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  // Also ends what the hole this file is about would leave running.
  box?.cleanup();
  box = undefined;
});

/** The first directory on PATH holding `name`, or null. */
function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  return null;
}
const perl = process.platform === 'linux' ? onPath('perl') : null;
// prun takes its batch lock with util-linux flock, which a system can have without setpriv.
const flock = onPath('flock');

describe.skipIf(perl === null || flock === null)(`the batch supervisor without setpriv${perl === null || flock === null ? ' (skipped: not Linux, or no perl or flock on PATH)' : ''}`, () => {
  it('kill -9 of the supervisor with perl but neither setpriv nor unshare on PATH leaves no keeper, worker or descendant', async () => {
    const sandboxed = sandbox();
    box = sandboxed;
    // PATH: node (the fixtures are `#!/usr/bin/env node`), perl and flock, nothing else.
    const bin = join(sandboxed.root, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    symlinkSync(perl!, join(bin, 'perl'));
    symlinkSync(flock!, join(bin, 'flock'));
    const work = join(sandboxed.root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [planUnit('s1', '[[agy HANG=1]] [[agy SPAWN_GRANDCHILD=1]] [[agy SPAWN_DETACHED=1]]')] }));
    const dir = join(work, 'fanout');
    const tmp = join(sandboxed.root, 'tmp');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1'], { env: { ...sandboxed.env, PATH: bin }, cwd: work });
    let supervisor = 0;
    await waitFor(() => {
      if (!existsSync(dir) || !handedOver(dir, 's1')) return false;
      supervisor = (ledger(dir) as unknown as { status: string; dispatcher_pid: number }[]).findLast((l) => l.status === 'running')!.dispatcher_pid;
      // The keeper and the tree under it: agy-by-prompt, fake agy, its grandchild and the setsid'd one.
      return processesUnder(tmp).length >= 5;
    }, 'the worker tree under its keeper');
    const stateDir = readdirSync(tmp).find((name) => name.startsWith('prun-task-'))!;
    const record = readFileSync(join(tmp, stateDir, 'isolation'), 'utf8');
    process.kill(supervisor, 'SIGKILL');
    let left: number[] = [];
    try {
      await waitFor(() => processesUnder(tmp).length === 0, 'no keeper, worker or descendant left', 5_000);
    } catch {
      left = processesUnder(tmp);
    }
    expect(left).toEqual([]);
    expect(record).toMatch(/\nparent-death: prctl PR_SET_PDEATHSIG TERM\ndirectory-lock: flock\n$/);
    await run;
    expect(latestStatus(dir)).toEqual({ s1: 'failed' });
    expect(ledger(dir).at(-1)!.note).toBe(`the batch's supervisor (pid ${supervisor}) died of SIGKILL before this unit published a result`);
  }, 60_000);
});
