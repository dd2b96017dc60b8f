// `prun batch PLAN --dry-run [--json]` as typed in a scratch directory: the real run's checks,
// then the schedule, with zero worker starts (fake agy's call log) and nothing created.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { prun, sandbox, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

/** Every name under `dir`, recursively (what a dry run must leave exactly as it was). */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

interface DryUnit {
  id: string;
  wave: number;
  mode: string;
  workspace: { kind: string; path: string | null; source: string | null };
  model: string;
  quota: { decision: string; group: string | null; detail: string };
  timeout_s: number;
}

describe('prun batch --dry-run', () => {
  it('checks the plan as a real run would, prints waves, mode, workspace, model and quota, and starts and creates nothing', async () => {
    box = sandbox();
    mkdirSync(join(box.root, 'repo'));
    await execa('git', ['init', '-q', join(box.root, 'repo')]);
    // Gemini exhausted, Claude and GPT half full: an unpinned default unit moves over, a unit
    // pinned to the Gemini model is refused until the reset.
    const snapshot = join(box.root, 'quota.json');
    writeFileSync(
      snapshot,
      JSON.stringify({
        cached_at: Date.now() / 1000,
        usage: {
          groups: [
            { name: 'Gemini Models', buckets: [{ id: 'gemini-5h', window: '5h', remaining_fraction: 0, reset_time: '2099-01-01T00:00:00Z' }] },
            {
              name: 'Claude and GPT Models',
              buckets: [
                { id: 'c-5h', window: '5h', remaining_fraction: 0.5, reset_time: '2099-01-01T00:00:00Z' },
                { id: 'c-week', window: 'weekly', remaining_fraction: 0.6, reset_time: '2099-01-02T00:00:00Z' },
              ],
            },
          ],
        },
      }),
    );
    const env: NodeJS.ProcessEnv = { ...box.env, AGY_QUOTA_CACHE: snapshot };
    delete env.PRUN_AGY_QUOTA_GATE;
    writePlan(box.root, [
      { id: 'survey', prompt: 'UNIT-ID:survey look', mode: 'plan' },
      { id: 'fix', prompt: 'UNIT-ID:fix change it', clone: 'repo', depends_on: ['survey'], timeout: 600 },
      { id: 'pinned', prompt: 'UNIT-ID:pinned x', model: 'gemini-3.8-flash-high' },
      { id: 'other', prompt: 'UNIT-ID:other x', model: 'fake-model-x', depends_on: ['fix', 'pinned'] },
    ]);
    const before = tree(box.root);

    const text = await prun(['batch', 'plan.json', '--dry-run', '--dir', 'fanout'], { env, cwd: box.root });
    expect(text.exitCode).toBe(0);
    const lines = String(text.stdout).split('\n');
    expect(lines[0]).toMatch(/^dry run of plan\.json: 4 unit\(s\) in 3 wave\(s\) for \S+\/fanout; nothing was started or created$/);
    expect(lines[1]).toMatch(/^WAVE\s+UNIT\s+MODE\s+WORKSPACE\s+MODEL\s+QUOTA$/);
    expect(lines[2]).toMatch(/^1\s+survey\s+plan\s+scratch\s+claude-sonnet-5-5-high\s+balance: MODEL-BALANCE from=gemini-3.8-flash-high to=claude-sonnet-5-5-high/);
    expect(lines[3]).toMatch(/^2\s+fix\s+accept-edits\s+clone of \S+\/repo\s+claude-sonnet-5-5-high\s+balance: /);
    expect(lines[4]).toMatch(/^1\s+pinned\s+accept-edits\s+scratch\s+gemini-3.8-flash-high\s+deferred: the Agy Gemini quota group is exhausted \(resets 2099-01-01T00:00:00Z\)/);
    expect(lines[5]).toMatch(/^3\s+other\s+accept-edits\s+scratch\s+fake-model-x\s+ungated: model in no metered group$/);

    const json = await prun(['batch', 'plan.json', '--dry-run', '--json'], { env, cwd: box.root });
    expect(json.exitCode).toBe(0);
    const schedule = JSON.parse(String(json.stdout)) as { dry_run: boolean; waves: string[][]; units: DryUnit[] };
    expect(schedule.dry_run).toBe(true);
    expect(schedule.waves).toEqual([['survey', 'pinned'], ['fix'], ['other']]);
    const fix = schedule.units.find((u) => u.id === 'fix')!;
    expect(fix).toMatchObject({ wave: 2, mode: 'accept-edits', workspace: { kind: 'clone', source: join(box.root, 'repo') }, timeout_s: 600 });
    expect(fix.workspace.path).toMatch(/\/clones\/fix$/);
    expect(schedule.units.find((u) => u.id === 'pinned')!.quota).toMatchObject({ decision: 'deferred', group: 'gemini' });

    // Not one worker (nor any agy call at all), no batch directory, no state directory, nothing new.
    expect(existsSync(join(box.logDir, 'starts.jsonl'))).toBe(false);
    expect(existsSync(join(box.logDir, 'calls.jsonl'))).toBe(false);
    expect(tree(box.root)).toEqual(before);
  }, 60_000);

  it("shows each unit's deadline as the dispatcher will read it: the plan's timeout, else the environment's, else its default", async () => {
    box = sandbox();
    writePlan(box.root, [{ id: 'own', prompt: 'UNIT-ID:own x', timeout: 600 }, { id: 'env', prompt: 'UNIT-ID:env x' }]);
    const deadlines = async (extra: NodeJS.ProcessEnv): Promise<Record<string, number>> => {
      const run = await prun(['batch', 'plan.json', '--dry-run', '--json'], { env: { ...box!.env, ...extra }, cwd: box!.root });
      expect(run.exitCode).toBe(0);
      const units = (JSON.parse(String(run.stdout)) as { units: DryUnit[] }).units;
      return Object.fromEntries(units.map((u) => [u.id, u.timeout_s]));
    };
    // The real run passes --print-timeout 5s to env's worker (timeout-hook.test.ts reads it).
    expect(await deadlines({ ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '5' })).toEqual({ own: 600, env: 5 });
    expect(await deadlines({})).toEqual({ own: 600, env: 2700 });
  }, 60_000);

  it('refuses what the real run refuses, with its message and exit 2', async () => {
    box = sandbox();
    writePlan(box.root, [{ id: 'a', prompt: 'UNIT-ID:a x' }]);
    const before = tree(box.root);
    const badSetting = await prun(['batch', 'plan.json', '--dry-run'], { env: { ...box.env, ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, cwd: box.root });
    const real = await prun(['batch', 'plan.json'], { env: { ...box.env, ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS: '45m' }, cwd: box.root });
    expect(badSetting.exitCode).toBe(2);
    expect(String(badSetting.stderr)).toBe(String(real.stderr));
    expect(String(badSetting.stderr)).toMatch(/^prun: unit a: the dispatcher would refuse it: ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS must be a positive integer$/);

    writePlan(box.root, [{ id: 'a', prompt: 'UNIT-ID:a x', timeout: 0 }], 'zero.json');
    const zero = await prun(['batch', 'zero.json', '--dry-run'], { env: box.env, cwd: box.root });
    expect(zero.exitCode).toBe(2);
    expect(String(zero.stderr)).toBe('prun: plan field units[0](id a).timeout: must be a positive whole number of seconds');

    const resume = await prun(['batch', '--resume', 'fanout', '--dry-run'], { env: box.env, cwd: box.root });
    expect(resume.exitCode).toBe(2);
    expect(String(resume.stderr)).toMatch(/^prun: --dry-run goes with a new plan/);
    expect(tree(box.root).filter((name) => name !== 'zero.json')).toEqual(before);
    expect(existsSync(join(box.logDir, 'starts.jsonl'))).toBe(false);
  }, 60_000);
});
