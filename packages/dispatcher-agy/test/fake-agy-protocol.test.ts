// tools/fake-agy stands in for agy in every test: its worker stream must be agy's stream-json
// protocol (tools/fake-agy/README.md "Protocol"): init, step_update progress with the
// closed-vocabulary step_type (tool calls carrying tool_info), then the terminal result.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { FAKE_AGY, Root, readState } from './harness.js';

const STEP_TYPES = new Set(['agent_response', 'tool']);
const STATES = new Set(['ACTIVE', 'DONE', 'ERROR']);

type Event = Record<string, unknown>;

function workerEvents(env: Record<string, string>): Event[] {
  const stdout = execFileSync(FAKE_AGY, ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high'], {
    input: '{"event": "user", "message": {"content": "# unit_a result"}}\n',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
  });
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Event);
}

describe('fake-agy speaks agy stream-json', () => {
  test('progress is step_update events with a step_type; tool calls carry tool_info', () => {
    const events = workerEvents({ FAKE_AGY_EXTRA_LINES: '2', FAKE_AGY_TOOL_CALLS: '1' });
    expect(events.map((e) => e['event'])).toEqual(['init', 'step_update', 'step_update', 'step_update', 'step_update', 'result']);
    const steps = events.slice(1, -1).map((e) => e['step_update'] as Event);
    for (const step of steps) {
      expect(STEP_TYPES.has(step['step_type'] as string), JSON.stringify(step)).toBe(true);
      expect(STATES.has(step['state'] as string), JSON.stringify(step)).toBe(true);
      expect(Number.isInteger(step['step_index'])).toBe(true);
      // No message/role/content shape of another CLI's stream.
      expect(step).not.toHaveProperty('role');
    }
    const tools = steps.filter((s) => s['step_type'] === 'tool');
    expect(tools.map((s) => s['state'])).toEqual(['ACTIVE', 'DONE']);
    for (const tool of tools) {
      expect(tool['tool_name']).toBe('view_file');
      expect(tool['tool_info']).toMatchObject({ name: 'view_file', parameters: expect.any(Object) });
    }
    expect(new Set(tools.map((s) => s['step_index'])).size).toBe(1);
    const texts = steps.filter((s) => s['step_type'] === 'agent_response');
    expect(texts.map((s) => s['text_delta'])).toEqual(['progress 1 of 2', 'progress 2 of 2']);
    expect(texts.every((s) => !('tool_info' in s))).toBe(true);
    expect((events.at(-1)!['result'] as Event)['response']).toMatch(/^# unit_a result\n/);
  });

  test('FAKE_AGY_TIMES_FILE gets one line per worker run: process start <= script began <= script ended, ms since the epoch', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prun-test-fake-agy-times-'));
    try {
      const file = join(dir, 'times');
      const before = Date.now();
      workerEvents({ FAKE_AGY_TIMES_FILE: file });
      workerEvents({ FAKE_AGY_TIMES_FILE: file });
      const after = Date.now();
      const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      expect(lines).toHaveLength(2);
      for (const line of lines) {
        expect(line).toMatch(/^\d+\.\d{3} \d+\.\d{3} \d+\.\d{3}$/);
        const [start, began, ended] = line.split(' ').map(Number) as [number, number, number];
        expect(start).toBeGreaterThanOrEqual(before - 1);
        expect(start).toBeLessThanOrEqual(began);
        expect(began).toBeLessThanOrEqual(ended);
        expect(ended).toBeLessThanOrEqual(after + 1);
      }
      // The two runs, one after the other, in order.
      const [first, second] = lines.map((line) => line.split(' ').map(Number)) as [number[], number[]];
      expect(second[0]!).toBeGreaterThanOrEqual(first[2]!);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('events keep Python json.dumps spacing', () => {
    const stdout = execFileSync(FAKE_AGY, ['--output-format', 'stream-json'], {
      input: '{}\n',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FAKE_AGY_EXTRA_LINES: '1' },
      encoding: 'utf8',
    });
    expect(stdout.split('\n')[1]).toBe(
      '{"event": "step_update", "step_update": {"step_index": 1, "step_type": "agent_response", "state": "DONE", "text_delta": "progress 1 of 1"}}',
    );
  });
});

describe('the dispatcher reads a step_update stream', () => {
  const root = new Root();
  afterAll(() => root.cleanup());

  test('tool and text steps land in tail; the result event still decides the outcome', async () => {
    const res = await root.run({ env: { FAKE_AGY_EXTRA_LINES: '3', FAKE_AGY_TOOL_CALLS: '2' } });
    expect(res.code).toBe(0);
    const tail = readState(res.stateDir, 'tail');
    expect(tail.split('\n').filter((line) => line.includes('"event": "step_update"'))).toHaveLength(7);
    expect(readFileSync(root.result, 'utf8')).toMatch(/^# unit_a result\n/);
    expect(readState(res.stateDir, 'conversation-id')).toBe('conv-fixed-0001\n');
  });

  test('a step_update stream without a result event is still a failed dispatch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prun-fake-agy-proto-'));
    try {
      const events = join(dir, 'events.jsonl');
      writeFileSync(
        events,
        '{"event": "init", "conversation_id": "c1"}\n{"event": "step_update", "step_update": {"step_index": 1, "step_type": "agent_response", "state": "DONE", "text_delta": "# unit_a result\\nConclusion: complete but never reported"}}\n',
      );
      const fresh = new Root();
      try {
        const res = await fresh.run({ env: { FAKE_AGY_EVENTS_FILE: events } });
        expect(res.code, res.stderr).toBe(70);
        expect(readFileSync(fresh.result, 'utf8')).toContain('FALLBACK');
      } finally {
        fresh.cleanup();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
