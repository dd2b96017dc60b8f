// The dispatcher's busy refusal (an earlier worker still holds the unit's clone: exit 75, a
// FALLBACK naming the directory, no agy started) as prun batch meets it: seen live, and settled
// on --resume from the FALLBACK a dispatcher published while no batch watched. Both must defer
// the unit and run it once the clone is free: never failed, never counted as quota.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRunning } from '../src/units.js';
import { handedOver, latestStatus, ledger, openGate, prun, repoRoot, sandbox, waitFor, workerCalls, workerStarts, type Sandbox } from './helpers.js';

const DISPATCHER = join(repoRoot, 'packages/dispatcher-agy/bin/prun-dispatch-agy.js');

let box: Sandbox | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  if (holder?.exitCode === null && holder.signalCode === null) {
    const gone = new Promise((resolve) => holder!.once('exit', resolve));
    holder.kill('SIGKILL');
    await gone;
  }
  holder = undefined;
  box?.cleanup();
  box = undefined;
});

/**
 * Whether some process holds the flock on `dir` (the dispatcher's one-worker-per-directory
 * lock). Read from /proc/locks where there is one: asking with `flock -n` takes the lock for a
 * moment, and a launcher trying it in that moment is refused as busy by the test itself.
 */
const lockHeld = (dir: string): boolean => {
  if (!existsSync('/proc/locks')) return spawnSync('flock', ['-n', dir, 'true'], { stdio: 'ignore' }).status !== 0;
  const inode = statSync(dir).ino;
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .some((line) => /\bFLOCK\b/.test(line) && line.split(/\s+/).some((field) => field.endsWith(`:${inode}`)));
};

type Line = ReturnType<typeof ledger>[number] & { dispatcher_pid?: number };

describe('prun batch and the dispatcher\'s busy refusal', () => {
  const flock = spawnSync('flock', ['--version'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!flock)('defers a unit whose clone an earlier worker holds, live and after a restart, and runs it once the clone is free', async () => {
    // `flock` (util-linux) is what the test uses to see the lock; skipped, with this reason, without it.
    box = sandbox({ ANTIGRAVITY_PREFLIGHT: 'force' });
    const env = box.env;
    const work = join(box.root, 'work');
    const repo = join(box.root, 'repo');
    mkdirSync(work);
    mkdirSync(repo);
    spawnSync('git', ['init', '-q', repo]);
    writeFileSync(join(repo, 'README'), 'x\n');
    spawnSync('git', ['-C', repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'x', '--allow-empty']);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [{ id: 'u', prompt: 'UNIT-ID:u edit', clone: repo }] }));
    const dir = join(work, 'fanout');
    const clone = join(dir, 'clones', 'u');

    // 1. A first run makes the clone; its worker fails, so --retry-failed runs the unit again.
    const first = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: { ...env, FAKE_AGY_EXIT: '3' }, cwd: work });
    expect(first.exitCode).toBe(1);
    expect(existsSync(clone)).toBe(true);

    // 2. An earlier worker in that clone: a dispatcher started by hand, its worker held on a gate.
    writeFileSync(join(box.root, 'holder.md'), 'UNIT-ID:holder hold the clone [[gate holder]]');
    holder = spawn(
      process.execPath,
      [DISPATCHER, `--prompt-file=${join(box.root, 'holder.md')}`, `--result-file=${join(box.root, 'holder-result.md')}`, '--unit-id=holder', '--mode=accept-edits'],
      { env: { ...env, PRUN_SCRATCH_CWD: clone }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let holderErr = '';
    holder.stderr?.on('data', (chunk: Buffer) => {
      holderErr += chunk.toString();
    });
    const holderDone = new Promise<number | null>((resolve) => holder!.once('exit', resolve));
    // Waited for by its worker's start (after its launcher took the lock), not by probing the
    // lock: a probe holds the lock for a moment itself, and the holder's launcher meeting that
    // moment would be refused as busy.
    await waitFor(() => (workerStarts(box!.logDir).u ?? 0) >= 2 || holder!.exitCode !== null, 'the holder to take the clone lock');
    expect(lockHeld(clone), holderErr).toBe(true);

    // 3. The restart path: the retry's dispatcher is held in its preflight, the batch is
    //    SIGKILLed, then the dispatcher goes on unwatched and publishes the busy FALLBACK.
    const retry = prun(['batch', '--retry-failed', 'fanout'], { env: { ...env, FAKE_AGY_PREFLIGHT_GATE: 'preflight' }, cwd: work });
    await waitFor(() => (ledger(dir) as Line[]).some((l) => l.id === 'u' && l.status === 'running' && l.dispatcher_pid !== undefined && l.attempt === 2) && handedOver(dir, 'u'), 'the retry dispatcher');
    const unwatched = (ledger(dir) as Line[]).findLast((l) => l.dispatcher_pid !== undefined)!.dispatcher_pid!;
    retry.kill('SIGKILL');
    await retry;
    openGate(box, 'preflight');
    const result = join(dir, 'results', 'u.md');
    await waitFor(() => !isRunning(unwatched) && existsSync(result), 'the unwatched dispatcher to publish and exit', 60_000);
    expect(readFileSync(result, 'utf8')).toContain(`another worker is still running in ${clone}`);

    // 4. --resume settles that FALLBACK as deferred (busy), dispatches again, meets the busy
    //    refusal live (exit 75), defers again; once the holder is gone the unit runs and is done.
    const resume = prun(['batch', '--resume', 'fanout'], { env, cwd: work });
    let stderr = '';
    resume.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await waitFor(() => ledger(dir).some((l) => l.id === 'u' && l.status === 'deferred' && l.attempt === 3), 'a live busy refusal', 60_000);
    openGate(box, 'holder');
    expect(await holderDone).toBe(0);
    const resumed = await resume;
    expect(resumed.exitCode, stderr).toBe(0);
    expect(latestStatus(dir)).toEqual({ u: 'done' });

    const lines = ledger(dir).filter((l) => l.id === 'u');
    const settled = lines.filter((l) => l.attempt === 2 && l.status !== 'running');
    // The unwatched dispatch: deferred, not failed, the busy reason as its note.
    expect(settled.map((l) => l.status)).toEqual(['deferred']);
    expect(settled[0]!.note).toBe(`another worker is still running in ${clone} (its process tree holds the directory's lock); this one was not started`);
    // The live refusal: deferred with the dispatcher's exit 75 and the same reason, about 5 s on.
    const live = lines.find((l) => l.attempt === 3 && l.status === 'deferred')!;
    expect(live).toMatchObject({ exit_code: 75, note: settled[0]!.note });
    const wait = Date.parse(live.retry_at!) - Date.parse((live as Line & { ended_at: string }).ended_at);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(6_000);
    // Never quota: no quota message, and no unit failed after the first run.
    expect(stderr).not.toMatch(/quota/);
    expect(lines.filter((l) => l.status === 'failed').map((l) => l.attempt)).toEqual([1]);
    // The refused dispatches started no worker: u's worker ran on the first run and the last.
    expect(workerCalls(box.logDir).filter((c) => c.unit === 'u')).toHaveLength(2);
    expect(workerCalls(box.logDir).filter((c) => c.unit === 'holder')).toHaveLength(1);
    // Counted at start, before a worker reads its prompt: the holder and u's two runs, all in u's clone.
    expect(workerStarts(box.logDir)).toEqual({ u: 3 });
  }, 180_000);
});
