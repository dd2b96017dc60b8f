// Each attempt of a unit is its own dispatch with its own state directory: what the ledger
// records (state_dir, and the model read from it) and what a failed attempt's note quotes
// (the last stderr line) must come from the attempt that ran, never from an earlier one.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handedOver, latestStatus, ledger, prun, sandbox, waitFor, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

/** Every `STATE-DIR <path>` line in a dispatcher stdout capture. */
const stateDirLines = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('STATE-DIR ')).map((l) => l.slice('STATE-DIR '.length)) : [];

describe('prun batch attempts', () => {
  it('records the state dir of the attempt that ran, and keeps each earlier attempt\'s logs beside it', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [{ id: 'a', prompt: 'UNIT-ID:a work [[agy DELAY_MS=1500]]', model: 'fake-model-x' }] }));
    const dir = join(work, 'fanout');
    const first = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: { ...box.env, FAKE_AGY_EXIT: '3' }, cwd: work });
    expect(first.exitCode).toBe(1);
    const firstDir = ledger(dir).findLast((l) => l.status === 'failed')!.state_dir;
    expect(firstDir).not.toBeNull();

    const retry = await prun(['batch', '--retry-failed', 'fanout'], { env: box.env, cwd: work });
    expect(retry.exitCode, String(retry.stderr)).toBe(0);
    const done = ledger(dir).findLast((l) => l.status === 'done')!;
    // The current attempt's capture holds exactly its own STATE-DIR; the first attempt's is kept.
    expect(stateDirLines(join(dir, 'logs', 'a.stdout'))).toEqual([done.state_dir]);
    expect(stateDirLines(join(dir, 'logs', 'a.attempt-1.stdout'))).toEqual([firstDir]);
    expect(existsSync(join(dir, 'logs', 'a.attempt-1.stderr'))).toBe(true);
    expect(done.state_dir).not.toBe(firstDir);
    // No row of the second attempt ever named the first attempt's state dir.
    const second = ledger(dir).filter((l) => l.attempt === 2);
    expect(second.map((l) => l.state_dir).filter((d) => d === firstDir)).toEqual([]);
  }, 90_000);
});

describe('prun batch summary table', () => {
  it('shows RESULT missing for a unit that has no result file (one the batch never ran)', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [{ id: 'bad', prompt: 'UNIT-ID:bad [[agy EXIT=3]]', model: 'fake-model-x' }, { id: 'later', prompt: 'UNIT-ID:later', model: 'fake-model-x' }] }));
    // One at a time, and no new unit after the first failure: later never runs.
    const ended = await prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', '--halt', 'soon,fail=1'], { env: box.env, cwd: work });
    expect(ended.exitCode).toBe(103);
    const rows = String(ended.stdout).split('\n');
    expect(rows.find((r) => r.startsWith('bad '))).toMatch(/^bad +failed +3 +results\/bad\.md \(FALLBACK\) +Agy exited with code 3/);
    expect(rows.find((r) => r.startsWith('later '))).toMatch(/^later +queued +- +missing/);
  }, 60_000);

  it("shows the FALLBACK prun publishes for a unit whose supervisor died before it published anything", async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [{ id: 'gone', prompt: 'UNIT-ID:gone [[gate never]]', model: 'fake-model-x' }, { id: 'ok', prompt: 'UNIT-ID:ok', model: 'fake-model-x' }] }));
    const dir = join(work, 'fanout');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work });
    // The batch's supervisor hosts both units: kill it once ok is done, so only gone dies with it.
    await waitFor(() => existsSync(dir) && handedOver(dir, 'gone') && latestStatus(dir).ok === 'done', 'the dispatcher of gone, with ok done');
    const pid = (ledger(dir).findLast((l) => l.id === 'gone' && (l as { dispatcher_pid?: number }).dispatcher_pid !== undefined) as unknown as { dispatcher_pid: number }).dispatcher_pid;
    process.kill(pid, 'SIGKILL');
    const ended = await run;
    expect(ended.exitCode).toBe(1);
    const rows = String(ended.stdout).split('\n');
    expect(rows.find((r) => r.startsWith('gone '))).toMatch(new RegExp(`^gone +failed +137 +results/gone\\.md \\(FALLBACK\\) +the batch's supervisor \\(pid ${pid}\\) died of SIGKILL before this unit published a result$`));
    expect(rows.find((r) => r.startsWith('ok '))).toMatch(/^ok +done +0 +results\/ok\.md/);
  }, 60_000);
});
