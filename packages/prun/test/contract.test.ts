// What a finished unit's ledger line says about its result and its model: the return contract
// checked (`invalid` is a status of its own, retried as a restatement), and the model that ran,
// read from the unit's state directory, with any quota fallback.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, ledger, prun, sandbox, workerCalls, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

interface SummaryUnit {
  id: string;
  status: string;
  model: string | null;
  quota_fallback: boolean;
  note: string | null;
}

describe('prun batch checks the return contract', () => {
  it('records a result without the contract as invalid, counts it like a failure, and --retry-failed asks for a restatement', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    mkdirSync(work);
    const units = [
      { id: 'g1', prompt: 'UNIT-ID:g1 fine', model: 'fake-model-x' },
      { id: 'v1', prompt: 'UNIT-ID:v1 [[agy RESPONSE=I did the work but wrote no contract lines at all.]]', model: 'fake-model-x' },
      { id: 'v2', prompt: 'UNIT-ID:v2 [[agy RESPONSE=# v2 result\nConclusion: done\nFiles: none\nOpen items: none\n]]', model: 'fake-model-x' },
      { id: 'v3', prompt: 'UNIT-ID:v3 after v1', model: 'fake-model-x', depends_on: ['v1'] },
      { id: 'f1', prompt: 'UNIT-ID:f1 [[agy EXIT=3]]', model: 'fake-model-x' },
    ];
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
    const dir = join(work, 'fanout');
    const first = await prun(['batch', 'plan.json', '--dir', 'fanout', '--json'], { env: box.env, cwd: work });
    expect(first.exitCode).toBe(4);
    const summary = JSON.parse(String(first.stdout)) as { counts: Record<string, number>; units: SummaryUnit[] };
    expect(summary.counts).toMatchObject({ done: 1, invalid: 2, failed: 2 });
    expect(latestStatus(dir)).toEqual({ g1: 'done', v1: 'invalid', v2: 'invalid', v3: 'failed', f1: 'failed' });
    const note = (id: string) => summary.units.find((u) => u.id === id)!.note;
    expect(note('v1')).toBe('result does not follow the return contract: its first line is not the header "# v1 result"');
    expect(note('v2')).toBe('result does not follow the return contract: it lacks Verification:');
    expect(note('v3')).toBe('dependency v1 invalid');
    // A FALLBACK is still failed.
    expect(note('f1')).toBe('Agy exited with code 3');

    const retry = await prun(['batch', '--retry-failed', 'fanout'], { env: box.env, cwd: work });
    expect(retry.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ g1: 'done', v1: 'done', v2: 'done', v3: 'done', f1: 'done' });
    for (const id of ['v1', 'v2']) {
      const calls = workerCalls(box.logDir).filter((c) => c.unit === id);
      expect(calls, id).toHaveLength(2);
      expect(calls[1]!.argv.join(' ')).toContain('--conversation conv-fixed-0001');
      expect(calls[1]!.prompt).toContain('did not follow the return contract');
      expect(calls[1]!.prompt).toContain(`# ${id} result\nConclusion: <one line>\nFiles: <files created or modified, or none>`);
      expect(readFileSync(join(dir, 'results', `${id}.md`), 'utf8')).toMatch(new RegExp(`^# ${id} result\\nConclusion: complete\\n`));
    }
    // The failed unit's follow-up turn repeats its own prompt, not the restatement.
    const f1 = workerCalls(box.logDir).filter((c) => c.unit === 'f1');
    expect(f1).toHaveLength(2);
    expect(f1[1]!.prompt).toContain('UNIT-ID:f1');
    expect(workerCalls(box.logDir).filter((c) => c.unit === 'g1')).toHaveLength(1);
  }, 60_000);
});

describe('prun batch records the model that ran', () => {
  it('takes the model from the state directory and flags a quota fallback, in the ledger, --json and status', async () => {
    box = sandbox({ ANTIGRAVITY_PREFLIGHT: 'auto', FAKE_AGY_MODELS: 'gemini-3.8-flash-high\ngemini-3.9-flash-high\nclaude-sonnet-5-5-high' });
    const quota = join(box.root, 'quota.json');
    const reset = new Date(Date.now() + 3_600_000).toISOString();
    const bucket = (id: string, window: string, remaining: number) => ({ id, window, remaining_fraction: remaining, reset_time: reset });
    writeFileSync(
      quota,
      JSON.stringify({
        cached_at: Date.now() / 1000,
        usage: {
          groups: [
            { name: 'Gemini Models', buckets: [bucket('gemini-5h', '5h', 0.8), bucket('gemini-weekly', 'weekly', 0.8)] },
            { name: 'Claude and GPT Models', buckets: [bucket('claude-5h', '5h', 0), bucket('claude-weekly', 'weekly', 0.5)] },
          ],
        },
      }),
    );
    const env: NodeJS.ProcessEnv = { ...box.env, AGY_QUOTA_CACHE: quota };
    delete env.PRUN_AGY_QUOTA_GATE;
    const work = join(box.root, 'work');
    mkdirSync(work);
    const units = [
      { id: 'floats', prompt: 'UNIT-ID:floats default model' },
      { id: 'falls', prompt: 'UNIT-ID:falls on claude', model: 'claude-sonnet-5-5-high' },
    ];
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--json'], { env, cwd: work });
    expect(run.exitCode).toBe(0);
    const summary = JSON.parse(String(run.stdout)) as { units: SummaryUnit[] };
    const byId = Object.fromEntries(summary.units.map((u) => [u.id, u]));
    // The plan named no model: the dispatcher floated the default to the newest listed one.
    expect(byId.floats).toMatchObject({ model: 'gemini-3.9-flash-high', quota_fallback: false });
    // The plan named a Claude model, its group was empty: quota fell back to the Gemini group.
    expect(byId.falls!.model).toMatch(/^gemini-/);
    expect(byId.falls!.quota_fallback).toBe(true);
    const done = ledger(join(work, 'fanout')).filter((l) => l.status === 'done') as unknown as Array<{ id: string; model: string; model_notes?: string[]; quota_fallback?: boolean }>;
    const falls = done.find((l) => l.id === 'falls')!;
    expect(falls.model).toBe(byId.falls!.model);
    expect(falls.model_notes?.[0]).toMatch(/^MODEL-FALLBACK from=claude-sonnet-5-5-high to=gemini-3\.8-flash-high reason=claude-and-gpt-quota-exhausted/);
    expect(done.find((l) => l.id === 'floats')!.model).toBe('gemini-3.9-flash-high');
    // The worker really ran that model.
    const worker = workerCalls(box.logDir).find((c) => c.unit === 'falls')!;
    expect(worker.argv.join(' ')).toContain(`--model ${falls.model}`);

    const status = await prun(['status', 'fanout', '--json'], { env, cwd: work });
    const rows = (JSON.parse(String(status.stdout)) as { units: SummaryUnit[] }).units;
    expect(rows.find((r) => r.id === 'falls')).toMatchObject({ model: falls.model, quota_fallback: true });
  }, 60_000);
});
