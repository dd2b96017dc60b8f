// A per-unit `timeout` reaching the dispatcher's own deadline, and `--on-unit-done CMD`: its
// variables, its output kept off prun's stdout, and its failure never stopping the batch.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, prun, planUnit, sandbox, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const unit = planUnit;

/** The `--print-timeout` each unit's worker was started with, from the fixture's start log. */
function printTimeouts(logDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(logDir, 'starts.jsonl'), 'utf8').split('\n').filter(Boolean)) {
    const { cwd, argv } = JSON.parse(line) as { cwd: string; argv: string[] };
    const id = /prun-task-[0-9a-f]+-(.+)-\d+-[0-9a-f]+\/work$/.exec(cwd)?.[1] ?? '?';
    out[id] = argv[argv.indexOf('--print-timeout') + 1]!;
  }
  return out;
}

describe('per-unit timeout', () => {
  it("is the dispatcher's deadline for that unit only: the hanging worker is stopped on the dispatcher's path", async () => {
    // No grace past the deadline, so the dispatcher stops the worker at the unit's own timeout.
    box = sandbox({ PRUN_AGY_KILL_GRACE_SECONDS: '0' });
    writePlan(box.root, [unit('slow', '[[agy HANG=1]]', { timeout: 1 }), unit('plain')]);
    const started = Date.now();
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--json'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(1);
    // Bounded by the unit's 1 s, not the default 2700 s.
    expect(Date.now() - started).toBeLessThan(60_000);
    const dir = join(box.root, 'fanout');
    expect(latestStatus(dir)).toEqual({ slow: 'failed', plain: 'done' });
    const summary = JSON.parse(String(run.stdout)) as { units: Array<{ id: string; exit_code: number }> };
    expect(summary.units.find((u) => u.id === 'slow')!.exit_code).toBe(124);
    expect(readFileSync(join(dir, 'results', 'slow.md'), 'utf8')).toMatch(/\nConclusion: INCOMPLETE; Agy did not exit within 1s \(ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS=1 plus PRUN_AGY_KILL_GRACE_SECONDS=0\)/);
    expect(printTimeouts(box.logDir)).toEqual({ slow: '1s', plain: '2700s' });
    // Kept in the batch's own plan, so --resume gives the unit the same deadline.
    expect((JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8')) as { units: Array<{ id: string; timeout?: number }> }).units[0]!.timeout).toBe(1);
  }, 90_000);
});

describe('--on-unit-done', () => {
  it('runs after each unit settles with its id, status, result and state dir; its output and failure never reach stdout or stop the batch', async () => {
    box = sandbox();
    writePlan(box.root, [unit('good'), unit('bad', '[[agy EXIT=3]]'), unit('behind', '', { depends_on: ['bad'] }), unit('last', '', { depends_on: ['good'] })]);
    const hook = 'printf "%s|%s|%s|%s\\n" "$PRUN_UNIT_ID" "$PRUN_UNIT_STATUS" "$PRUN_UNIT_RESULT" "$PRUN_UNIT_STATE_DIR" >> hooks.log; echo "hook noise for $PRUN_UNIT_ID"; exit 7';
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', '--json', '--on-unit-done', hook], { env: box.env, cwd: box.root });
    const dir = join(box.root, 'fanout');
    // The batch ran to its end, and its exit code is its own (two failed units), not the hook's.
    expect(run.exitCode).toBe(2);
    expect(latestStatus(dir)).toEqual({ good: 'done', bad: 'failed', behind: 'failed', last: 'done' });
    // stdout is exactly the JSON document.
    const summary = JSON.parse(String(run.stdout)) as { exit_code: number };
    expect(summary.exit_code).toBe(2);
    const stderr = String(run.stderr);
    expect(stderr).toContain('hook noise for good');
    expect(stderr).toMatch(/^prun: --on-unit-done for unit bad \(failed\) exited with code 7; the batch goes on$/m);

    // One run per unit, in the order they settled, run in the directory prun was started in.
    const lines = readFileSync(join(box.root, 'hooks.log'), 'utf8').trim().split('\n').map((line) => line.split('|'));
    expect(lines.map(([id, status]) => `${id} ${status}`)).toEqual(['good done', 'bad failed', 'behind failed', 'last done']);
    for (const [id, , result, stateDir] of lines) {
      expect(result).toBe(join(dir, 'results', `${id}.md`));
      expect(existsSync(result!)).toBe(true);
      if (id === 'behind') expect(stateDir).toBe('');
      else expect(statSync(stateDir!).isDirectory()).toBe(true);
    }
  }, 90_000);
});
