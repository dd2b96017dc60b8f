// The pure halves of the live view: panel lines from a state, the end of a batch as a watcher
// decides it, and the rendering of a worker's stream events.
import { describe, expect, it } from 'vitest';
import { countUnits, etaMs, headerLines, panelLines, unitLine, type PanelState, type PanelUnit } from '../src/live/panel.js';
import { TailRenderer, renderEventLine } from '../src/live/log.js';
import { ABANDON_GRACE_MS, batchEnd } from '../src/live/watch.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');

function unit(id: string, patch: Partial<PanelUnit> = {}): PanelUnit {
  return { id, status: 'queued', startedAtMs: null, endedAtMs: null, tailBytes: null, growthPerS: null, model: null, stalled: false, retryAtMs: null, attempt: 0, ...patch };
}

function state(units: PanelUnit[], patch: Partial<PanelState> = {}): PanelState {
  return { dir: 'fanout', units, startedAtMs: NOW - 125_000, nowMs: NOW, jobs: 4, quota: null, ...patch };
}

describe('panel lines', () => {
  it('counts every status out of the total, with elapsed time and an ETA from finished durations', () => {
    const s = state([
      unit('a', { status: 'done', startedAtMs: NOW - 60_000, endedAtMs: NOW - 40_000 }),
      unit('b', { status: 'failed', startedAtMs: NOW - 50_000, endedAtMs: NOW - 30_000 }),
      unit('c', { status: 'running', startedAtMs: NOW - 5_000 }),
      unit('d'),
      unit('e'),
      unit('f', { status: 'deferred', retryAtMs: NOW + 65_000 }),
    ]);
    expect(countUnits(s.units)).toMatchObject({ done: 1, failed: 1, invalid: 0, running: 1, queued: 2, deferred: 1 });
    const [header, quota] = headerLines(s);
    expect(header).toBe('prun batch fanout  1/6 done  1 failed  1 running  2 queued  1 deferred  elapsed 2m05s  ETA 18s');
    // Mean 20 s (of a: b failed, no measure of a unit's work): 15 s left of c, 20 s each for d, e and f, over 4 lanes.
    expect(etaMs(s)).toBe((15_000 + 3 * 20_000) / 4);
    expect(quota).toBe('quota: 1 deferred, next try in 1m05s');
  });

  it('fits the header to 80 columns with elapsed and ETA, wrapping (never cutting) at 50; the directory escaped', () => {
    const units = [
      ...Array.from({ length: 18 }, (_, i) => unit(`d${i}`, { status: 'done', startedAtMs: NOW - 100_000, endedAtMs: NOW - 40_000 })),
      ...Array.from({ length: 6 }, (_, i) => unit(`r${i}`, { status: 'running', startedAtMs: NOW - 10_000 })),
      ...Array.from({ length: 176 }, (_, i) => unit(`q${i}`)),
    ];
    const s = state(units, { dir: 'b200', jobs: 6 });
    const at80 = panelLines(s, { columns: 80, rows: 24 });
    expect(at80[0]).toBe('prun batch b200  18/200 done  6 running  176 queued  elapsed 2m05s  ETA 30m10s');
    for (const line of at80) expect(line.length).toBeLessThan(80);
    const at50 = headerLines(s, undefined, 50);
    expect(at50).toEqual(['prun batch b200  18/200 done  6 running', '176 queued  elapsed 2m05s  ETA 30m10s']);
    for (const line of at50) expect(line.length).toBeLessThan(50);
    // A name with escape characters cannot clear the screen or set the title.
    const hostile = panelLines(state(units, { dir: 'dE\u001b[31mX\u001b]0;pwn\u0007' }), { columns: 200, rows: 24 });
    for (const line of hostile) expect(line).not.toMatch(/[\u0000-\u001f]/);
    expect(hostile[0]).toMatch(/^prun batch dE\\x1b\[31mX\\x1b\]0;pwn\\x07 /);
  });

  it('escapes the model as it escapes the directory, and never draws more lines than the terminal has rows but one', () => {
    // A model from a YAML plan (`model: |`) or a state directory's `model` file may hold a newline:
    // drawn as it is, it would take two rows where the panel counts one.
    const running = unit('r', { status: 'running', startedAtMs: NOW - 5_000, model: 'm-one\nm-two\u001b[2J' });
    const lines = panelLines(state([running]), { columns: 120, rows: 24 });
    for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f]/);
    expect(lines.at(-1)).toMatch(/m-one\\x0am-two\\x1b\[2J$/);
    // Three rows, a header of two lines at 30 columns: two lines, the cursor's row left free.
    const busy = [unit('a', { status: 'running', startedAtMs: NOW - 5_000 }), unit('b', { status: 'running', startedAtMs: NOW - 5_000 })];
    expect(headerLines(state(busy), undefined, 30).length).toBeGreaterThanOrEqual(2);
    for (const rows of [1, 2, 3, 4]) expect(panelLines(state(busy), { columns: 30, rows }).length).toBeLessThanOrEqual(rows - 1);
  });

  it('takes the ETA only from units that ran to completion, never from cancelled, killed or dependency-failed ones', () => {
    const stopped = [
      unit('c', { status: 'cancelled', startedAtMs: NOW - 5_000, endedAtMs: NOW - 4_000 }),
      unit('k', { status: 'failed', startedAtMs: NOW - 7_000, endedAtMs: NOW }),
      unit('dep', { status: 'failed', startedAtMs: NOW, endedAtMs: NOW }),
      unit('r', { status: 'running', startedAtMs: NOW - 60_000 }),
    ];
    expect(etaMs(state(stopped))).toBeNull();
    expect(headerLines(state(stopped))[0]).not.toContain('ETA');
    const ran = [...stopped, unit('ok', { status: 'done', startedAtMs: NOW - 100_000, endedAtMs: NOW - 20_000 }), unit('q')];
    // Mean 80 s (of ok alone): 20 s left of r, 80 s for q, over 2 lanes.
    expect(etaMs(state(ran))).toBe((20_000 + 80_000) / 2);
  });

  it('has no ETA before a unit finished, and shows the quota groups when a snapshot exists', () => {
    const s = state([unit('a', { status: 'running', startedAtMs: NOW - 1000 })], { quota: [{ label: 'Gemini', remaining: 0.12 }, { label: 'Claude/GPT', remaining: 0.9 }] });
    expect(etaMs(s)).toBeNull();
    expect(headerLines(s)[0]).not.toContain('ETA');
    expect(headerLines(s)[1]).toBe('quota: Gemini 12% left · Claude/GPT 90% left');
  });

  it('draws a running unit with elapsed, tail, growth, model and the stall marker', () => {
    const line = unitLine(unit('fix-a', { status: 'running', startedAtMs: NOW - 65_000, tailBytes: 12_595, growthPerS: 2048, model: 'gemini-3.8-flash-high', stalled: true }), NOW, 6);
    expect(line).toBe('  fix-a   running     1m05s  tail 12.3 KiB +2.0 KiB/s  gemini-3.8-flash-high  STALLED');
    const quiet = unitLine(unit('b', { status: 'running', startedAtMs: NOW - 1000 }), NOW, 4);
    expect(quiet).not.toContain('STALLED');
    expect(quiet).toContain('no tail');
    const deferred = unitLine(unit('q', { status: 'deferred', retryAtMs: NOW + 30_000, attempt: 2 }), NOW, 4);
    expect(deferred).toBe('  q     deferred        -  no tail                   retry in 30s  attempt 2');
    // The longest status keeps the elapsed column where every other status has it.
    const cancelled = unitLine(unit('c', { status: 'cancelled', startedAtMs: NOW - 5000, endedAtMs: NOW - 1000 }), NOW, 4);
    expect(cancelled.indexOf('4s')).toBe(quiet.indexOf('1s'));
  });

  it('fits a 200-unit batch on a 24-row screen: running units first, finished ones collapse', () => {
    const units = Array.from({ length: 200 }, (_, i) =>
      i < 150
        ? unit(`u${i}`, { status: 'done', startedAtMs: NOW - 400_000, endedAtMs: NOW - 300_000 + i })
        : i < 180
          ? unit(`u${i}`, { status: 'running', startedAtMs: NOW - 10_000, stalled: i === 179 })
          : unit(`u${i}`),
    );
    const lines = panelLines(state(units), { columns: 100, rows: 24 });
    expect(lines.length).toBeLessThanOrEqual(23);
    expect(lines[0]).toContain('150/200 done');
    expect(lines[0]).toContain('30 running');
    // The stalled unit is never the one collapsed away.
    expect(lines[1]).toMatch(/^ {2}u179 .*STALLED$/);
    expect(lines.at(-1)).toBe('  ... 9 more running (prun status fanout lists every unit)');
    // Long-finished units have no line of their own.
    expect(lines.some((line) => /^ {2}u1 /.test(line))).toBe(false);
  });

  it('keeps a recently finished unit on its own line, failures before successes', () => {
    const lines = panelLines(
      state([
        unit('ok', { status: 'done', startedAtMs: NOW - 9000, endedAtMs: NOW - 1000 }),
        unit('bad', { status: 'failed', startedAtMs: NOW - 9000, endedAtMs: NOW - 2000 }),
        unit('old', { status: 'done', startedAtMs: NOW - 90_000, endedAtMs: NOW - 60_000 }),
      ]),
      { columns: 100, rows: 24 },
    );
    expect(lines.slice(1).map((line) => line.trim().split(/\s+/)[0])).toEqual(['bad', 'ok']);
  });
});

describe('the end of a batch, as a watcher sees it', () => {
  const summary = { exit_code: 130, driver_pid: 41, document: {} };
  it('is the summary of the driver that wrote it, once it is gone or while it exits', () => {
    expect(batchEnd({ driverPid: null, summary, statuses: ['interrupted'], dispatchAlive: false, unattendedMs: 0 })).toEqual({ kind: 'finished', exitCode: 130, summary });
    expect(batchEnd({ driverPid: 41, summary, statuses: ['interrupted'], dispatchAlive: false, unattendedMs: 0 })).toMatchObject({ kind: 'finished', exitCode: 130 });
  });
  it('is running while a driver holds the lock, whatever an earlier run left', () => {
    expect(batchEnd({ driverPid: 42, summary, statuses: ['done'], dispatchAlive: false, unattendedMs: 0 })).toEqual({ kind: 'running' });
    expect(batchEnd({ driverPid: 42, summary: null, statuses: ['done'], dispatchAlive: false, unattendedMs: 0 })).toEqual({ kind: 'running' });
  });
  it('without a summary: finished when every unit settled, else abandoned once nothing has run it for the grace', () => {
    const idle = { driverPid: null, summary: null, dispatchAlive: false, unattendedMs: ABANDON_GRACE_MS };
    expect(batchEnd({ ...idle, statuses: ['done', 'failed', 'invalid'] })).toEqual({ kind: 'finished', exitCode: 2, summary: null });
    expect(batchEnd({ ...idle, statuses: ['done', 'running'] })).toEqual({ kind: 'abandoned' });
    expect(batchEnd({ ...idle, statuses: ['queued'] })).toEqual({ kind: 'abandoned' });
    // A resume started just before the watcher has not taken the lock yet.
    expect(batchEnd({ ...idle, unattendedMs: ABANDON_GRACE_MS - 1, statuses: ['queued'] })).toEqual({ kind: 'running' });
  });
  it("is running while a unit's dispatch runs without a driver (its supervisor outlived a driver killed with SIGKILL)", () => {
    expect(batchEnd({ driverPid: null, summary: null, dispatchAlive: true, unattendedMs: 60_000, statuses: ['done', 'running'] })).toEqual({ kind: 'running' });
  });
});

describe('worker output for a person', () => {
  it('draws each kind of stream event on lines of its own', () => {
    expect(renderEventLine('{"event": "init", "model": "gemini-3.8-flash-high", "conversation_id": "conv-1"}')).toEqual(['-- session: model gemini-3.8-flash-high, conversation conv-1']);
    expect(renderEventLine('{"event": "message", "role": "assistant", "content": "Reading the parser.\\nThen the tests."}')).toEqual(['Reading the parser.', 'Then the tests.']);
    expect(renderEventLine('{"event": "message", "role": "user", "content": "the prompt"}')).toEqual([]);
    expect(renderEventLine('{"event": "tool_use", "tool_name": "read_file", "parameters": {"path": "src/a.ts"}}')).toEqual(['> tool read_file {"path":"src/a.ts"}']);
    expect(renderEventLine('{"event": "tool_result", "tool_name": "read_file", "status": "success", "output": "42 lines"}')).toEqual(['< read_file ok: 42 lines']);
    expect(renderEventLine('{"event": "tool_result", "tool_id": "t1", "status": "error", "output": "ENOENT"}')).toEqual(['< t1 error: ENOENT']);
    expect(renderEventLine('{"event": "step_update", "step_type": "TOOL_CALL", "tool_info": {"name": "run_command", "arguments": {"cmd": "ls"}}}')).toEqual(['> tool run_command {"cmd":"ls"}']);
    // agy 1.1.8's step_update (tools/fake-agy/README.md "Protocol"): the step nested under `step_update`.
    const step = (fields: string): string => `{"event": "step_update", "step_update": {"step_index": 1, ${fields}}}`;
    expect(renderEventLine(step('"step_type": "agent_response", "state": "DONE", "text_delta": "progress 1 of 2"'))).toEqual(['progress 1 of 2']);
    const tool = '"step_type": "tool", "tool_name": "view_file", "tool_info": {"name": "view_file", "parameters": {"AbsolutePath": "/w/a.md"}}';
    expect(renderEventLine(step(`${tool}, "state": "ACTIVE"`))).toEqual(['> tool view_file {"AbsolutePath":"/w/a.md"}']);
    expect(renderEventLine(step(`${tool}, "state": "DONE"`))).toEqual(['< view_file ok']);
    expect(renderEventLine(step(`${tool}, "state": "ERROR"`))).toEqual(['< view_file error']);
    expect(renderEventLine('{"event": "result", "result": {"response": "# u result\\nConclusion: done", "status": "SUCCESS"}}')).toEqual(['-- result SUCCESS', '   # u result', '   Conclusion: done']);
    expect(renderEventLine('{"event": "result", "result": {"response": "I will", "status": "ERROR", "error": "quota reached"}}')).toEqual(['-- result ERROR: quota reached', '   I will']);
    expect(renderEventLine('{"event": "error", "message": "retrying"}')).toEqual(['! retrying']);
    // Unknown events are left out; a line that is not JSON is worker noise, shown as it is.
    expect(renderEventLine('{"event": "usage", "tokens": 3}')).toEqual([]);
    expect(renderEventLine('Loaded cached credentials.')).toEqual(['Loaded cached credentials.']);
  });

  it('never passes a control character to the terminal', () => {
    expect(renderEventLine('{"event": "message", "role": "assistant", "content": "\\u001b[2Jwiped"}')).toEqual(['\\x1b[2Jwiped']);
  });

  it('renders a growing tail line by line, a partial line once complete or flushed', () => {
    const renderer = new TailRenderer();
    const bytes = Buffer.from('{"event": "message", "role": "assistant", "content": "h\u00e9llo"}\n{"event": "message", "role": "assi');
    // Cut inside the two-byte é as well: the decoder keeps the half.
    expect(renderer.push(bytes.subarray(0, 57))).toEqual([]);
    expect(renderer.push(bytes.subarray(57))).toEqual(['h\u00e9llo']);
    expect(renderer.push(Buffer.from('stant", "content": "second"}'))).toEqual([]);
    expect(renderer.flush()).toEqual(['second']);
  });
});
