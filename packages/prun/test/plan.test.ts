import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decide, loadPlan, parsePlan, quotaRetryTime } from '../src/index.js';

const plan = (units: unknown[]) => JSON.stringify({ units });

describe('plan validation', () => {
  it.each([
    [plan([{ id: 'a' }]), 'plan field units[0](id a).prompt: exactly one of prompt or prompt_file is required'],
    [plan([{ id: 'a', prompt: 'x', prompt_file: 'y' }]), 'plan field units[0](id a).prompt: exactly one of prompt or prompt_file is required'],
    [plan([{ id: 'a b', prompt: 'x' }]), 'plan field units[0](id a b).id: must contain only letters, digits, dashes, or underscores'],
    [plan([{ id: 'a', prompt: 'x', mode: 'yolo' }]), 'plan field units[0](id a).mode:'],
    [plan([{ id: 'a', prompt: 'x', add_dirs: ['/tmp'] }]), 'plan field units[0](id a).mode: is required when add_dirs is given'],
    [plan([{ id: 'a', prompt: 'x', colour: 'red' }]), 'plan field units[0](id a)'],
    [plan([{ id: 'a', prompt: '   ' }]), 'plan field units[0](id a).prompt: must not be blank'],
    [plan([{ id: 'a', prompt: 'x' }, { id: 'a', prompt: 'y' }]), 'plan field units[1].id: duplicate id a'],
    [plan([{ id: 'a', prompt: 'x', depends_on: ['zz'] }]), 'plan field units[0](id a).depends_on: unknown unit zz'],
    [plan([{ id: 'a', prompt: 'x', depends_on: ['a'] }]), 'plan field units[0](id a).depends_on: a unit cannot depend on itself'],
    [plan([{ id: 'a', prompt: 'x', depends_on: ['b'] }, { id: 'b', prompt: 'y', depends_on: ['a'] }]), 'plan has a dependency cycle: a -> b -> a'],
    [plan([]), 'plan field units: must list at least one unit'],
    // What a refusal echoes is escaped: no raw ESC/OSC/BEL reaches the terminal.
    [plan([{ id: 'e\u001b[2J\u001b]0;pwn\u0007x', prompt: 'x' }]), 'plan field units[0](id e\\x1b[2J\\x1b]0;pwn\\x07x).id: must contain only'],
    [plan([{ id: 'a', prompt: 'x', depends_on: ['z\u001b[2J'] }]), 'plan field units[0](id a).depends_on: unknown unit z\\x1b[2J'],
    ['{"units": 3}', 'plan field units:'],
    ['{nope', 'plan p.json is not valid JSON'],
  ])('rejects %s', (text, message) => {
    expect(() => parsePlan(text, 'p.json')).toThrow(message);
  });

  it('reads YAML plans and resolves prompt files and paths against the plan folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prun-plan-'));
    try {
      writeFileSync(join(dir, 'b.md'), 'prompt from a file\n');
      writeFileSync(
        join(dir, 'plan.yaml'),
        'units:\n  - id: a\n    prompt: inline\n    clone: ./repo\n  - id: b\n    prompt_file: b.md\n    mode: plan\n    add_dirs: [docs]\n    depends_on: [a]\n',
      );
      const { units } = loadPlan(join(dir, 'plan.yaml'));
      expect(units).toEqual([
        { id: 'a', prompt: 'inline', mode: null, addDirs: [], clone: join(dir, 'repo'), model: null, dependsOn: [], timeoutSeconds: null },
        { id: 'b', prompt: 'prompt from a file\n', mode: 'plan', addDirs: [join(dir, 'docs')], clone: null, model: null, dependsOn: ['a'], timeoutSeconds: null },
      ]);
      writeFileSync(join(dir, 'bad.md'), Buffer.from([0xff, 0xfe, 0x00]));
      writeFileSync(join(dir, 'bad.json'), plan([{ id: 'c', prompt_file: 'bad.md' }]));
      expect(() => loadPlan(join(dir, 'bad.json'))).toThrow(`plan field units[0](id c).prompt_file: ${join(dir, 'bad.md')} is not valid UTF-8`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scheduling decisions', () => {
  const units = [
    { id: 'a', dependsOn: [] },
    { id: 'b', dependsOn: ['a'] },
    { id: 'c', dependsOn: [] },
    { id: 'd', dependsOn: ['b'] },
  ];
  const view = (status: Record<string, string>, extra: Partial<Parameters<typeof decide>[0]> = {}) =>
    decide({
      units,
      status: new Map(Object.entries(status)) as never,
      retryAt: new Map(),
      running: 0,
      jobs: 2,
      now: 1000,
      startingAllowed: true,
      ...extra,
    });

  it('starts ready units in plan order up to the free slots', () => {
    expect(view({ a: 'queued', b: 'queued', c: 'queued', d: 'queued' }).start).toEqual(['a', 'c']);
    expect(view({ a: 'queued', b: 'queued', c: 'queued', d: 'queued' }, { running: 1 }).start).toEqual(['a']);
    expect(view({ a: 'done', b: 'queued', c: 'running', d: 'queued' }, { running: 1 }).start).toEqual(['b']);
  });

  it('fails units behind a failed dependency, one level at a time', () => {
    expect(view({ a: 'failed', b: 'queued', c: 'done', d: 'queued' }).failForDependency).toEqual([['b', 'a']]);
    expect(view({ a: 'failed', b: 'failed', c: 'done', d: 'queued' }).failForDependency).toEqual([['d', 'b']]);
  });

  it('waits for a deferred unit until its retry time, then starts it', () => {
    const waiting = view({ a: 'deferred', b: 'queued', c: 'done', d: 'queued' }, { retryAt: new Map([['a', 5000]]) });
    expect(waiting.start).toEqual([]);
    expect(waiting.wakeAt).toBe(5000);
    expect(waiting.finished).toBe(false);
    expect(view({ a: 'deferred', b: 'queued', c: 'done', d: 'queued' }, { retryAt: new Map([['a', 900]]) }).start).toEqual(['a']);
  });

  it('is finished only when nothing runs and nothing can start', () => {
    expect(view({ a: 'done', b: 'done', c: 'failed', d: 'done' }).finished).toBe(true);
    expect(view({ a: 'running', b: 'queued', c: 'done', d: 'queued' }, { running: 1 }).finished).toBe(false);
    expect(view({ a: 'queued', b: 'queued', c: 'queued', d: 'queued' }, { startingAllowed: false }).finished).toBe(true);
    expect(view({ a: 'queued', b: 'queued', c: 'queued', d: 'queued' }, { startingAllowed: false, running: 1 }).finished).toBe(false);
  });

  it('reads the reset time out of a quota block', () => {
    const now = Date.parse('2026-09-11T15:00:00Z');
    expect(quotaRetryTime('the Agy Gemini quota group is exhausted (resets 2026-09-11T15:34:00Z).', now)).toBe(Date.parse('2026-09-11T15:34:00Z'));
    expect(
      quotaRetryTime('both Agy quota groups are exhausted (Gemini resets 2026-09-11T16:00:00Z, Claude and GPT resets 2026-09-11T15:10:00+00:00).', now),
    ).toBe(Date.parse('2026-09-11T15:10:00Z'));
    expect(quotaRetryTime('the Agy Gemini quota group is exhausted (resets later).', now)).toBeNull();
    expect(quotaRetryTime('the Agy Gemini quota group is exhausted (resets 2020-01-01T00:00:00Z).', now)).toBe(now);
  });
});

