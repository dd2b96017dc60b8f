import { EventEmitter } from 'node:events';
import type { FSWatcher } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import {
  GATHER_ENV,
  MONITOR_ENV,
  UsageError,
  Waker,
  classifyUnit,
  decideEvent,
  eventExitCode,
  formatStatus,
  initialMemory,
  landingOf,
  readSettings,
  unitName,
  type UnitFacts,
  type UnitStatus,
} from '../src/index.js';
import { isAgentCaller, liveViewWanted, parseArgs } from '../src/cli-common.js';
import { LiveView } from '../src/live.js';

const settings = { stallThresholdS: 10, stableWindowS: 5 };
const T0 = 1_800_000_000_000;
const never = (): never => {
  throw new Error('liveness must not be asked');
};

function facts(partial: Partial<UnitFacts>): UnitFacts {
  return { result: null, tail: null, ...partial };
}

describe('classifyUnit', () => {
  it('a result quiet for the window is done, or failed(fallback) by its first line', () => {
    const memory = initialMemory(T0);
    const done = classifyUnit(memory, facts({ result: { size: 3, mtimeMs: T0 - 5000, firstLine: '# u result' } }), never, settings, T0);
    expect(done.status).toEqual({ kind: 'done' });
    const failed = classifyUnit(
      memory,
      facts({ result: { size: 3, mtimeMs: T0 - 5000, firstLine: '# u result (FALLBACK, Agy wrote no final result)' } }),
      never,
      settings,
      T0,
    );
    expect(failed.status).toEqual({ kind: 'failed-fallback' });
  });

  it('a result younger than the window is finishing and wakes when the window passes', () => {
    const outcome = classifyUnit(initialMemory(T0), facts({ result: { size: 3, mtimeMs: T0 - 4999, firstLine: '# u result' } }), never, settings, T0);
    expect(outcome.status).toEqual({ kind: 'finishing' });
    expect(outcome.wakeAtMs).toBe(T0 + 1);
  });

  it('a future mtime is finishing', () => {
    const outcome = classifyUnit(initialMemory(T0), facts({ result: { size: 3, mtimeMs: T0 + 60_000, firstLine: '# u result' } }), never, settings, T0);
    expect(outcome.status.kind).toBe('finishing');
  });

  it('never asks liveness for a unit with a result, however long it has been quiet', () => {
    const probe = vi.fn(() => 'dead' as const);
    const memory = { lastSize: 5, lastMtimeMs: T0 - 100_000, lastGrowthMs: T0 - 100_000 };
    const outcome = classifyUnit(memory, facts({ result: { size: 3, mtimeMs: T0, firstLine: 'x' } }), probe, settings, T0);
    expect(outcome.status.kind).toBe('finishing');
    expect(probe).not.toHaveBeenCalled();
  });

  it('a missing tail counts as size 0: the first look is growth', () => {
    const outcome = classifyUnit(initialMemory(T0 - 60_000), facts({}), never, settings, T0);
    expect(outcome.status).toEqual({ kind: 'growing' });
    expect(outcome.memory).toEqual({ lastSize: 0, lastMtimeMs: 0, lastGrowthMs: T0 });
    expect(outcome.wakeAtMs).toBe(T0 + 10_000);
  });

  it('quiet below the threshold is growing, asks nothing, and wakes at the threshold', () => {
    const memory = { lastSize: 4, lastMtimeMs: T0 - 20_000, lastGrowthMs: T0 - 9_999 };
    const outcome = classifyUnit(memory, facts({ tail: { size: 4, mtimeMs: T0 - 20_000 } }), never, settings, T0);
    expect(outcome.status).toEqual({ kind: 'growing' });
    expect(outcome.wakeAtMs).toBe(T0 + 1);
  });

  it('quiet for the threshold asks liveness: alive or unknown stalls, dead fails', () => {
    const memory = { lastSize: 4, lastMtimeMs: T0 - 20_000, lastGrowthMs: T0 - 12_500 };
    const tail = facts({ tail: { size: 4, mtimeMs: T0 - 20_000 } });
    expect(classifyUnit(memory, tail, () => 'alive', settings, T0).status).toEqual({ kind: 'stalled', seconds: 12 });
    expect(classifyUnit(memory, tail, () => 'unknown', settings, T0).status).toEqual({ kind: 'stalled', seconds: 12 });
    expect(classifyUnit(memory, tail, () => 'dead', settings, T0).status).toEqual({ kind: 'failed-dispatch-dead' });
  });

  it('quiet for exactly the threshold is stalled; one millisecond less is not (both sides of the boundary)', () => {
    const tail = facts({ tail: { size: 4, mtimeMs: T0 - 20_000 } });
    const quiet = (ms: number) => ({ lastSize: 4, lastMtimeMs: T0 - 20_000, lastGrowthMs: T0 - ms });
    const probe = vi.fn((): 'alive' => 'alive');
    expect(classifyUnit(quiet(10_000), tail, probe, settings, T0).status).toEqual({ kind: 'stalled', seconds: 10 });
    expect(probe).toHaveBeenCalledTimes(1);
    const young = classifyUnit(quiet(9_999), tail, never, settings, T0);
    expect(young.status).toEqual({ kind: 'growing' });
    // It wakes exactly when the threshold is reached, not a poll later.
    expect(young.wakeAtMs).toBe(T0 + 1);
    expect(classifyUnit(quiet(10_000), tail, () => 'dead', settings, T0).status).toEqual({ kind: 'failed-dispatch-dead' });
    expect(classifyUnit(quiet(9_999), tail, never, settings, T0).status).toEqual({ kind: 'growing' });
  });

  it('threshold 0: a unit quiet for no time at all is stalled at its first quiet look', () => {
    const zero = { stallThresholdS: 0, stableWindowS: 0 };
    const memory = { lastSize: 4, lastMtimeMs: T0 - 20_000, lastGrowthMs: T0 };
    expect(classifyUnit(memory, facts({ tail: { size: 4, mtimeMs: T0 - 20_000 } }), () => 'unknown', zero, T0).status).toEqual({
      kind: 'stalled',
      seconds: 0,
    });
  });

  it('growth is a larger size or a newer mtime; a shrunk tail with an old mtime is no growth', () => {
    const memory = { lastSize: 10, lastMtimeMs: T0 - 1000, lastGrowthMs: T0 - 1000 };
    expect(classifyUnit(memory, facts({ tail: { size: 10, mtimeMs: T0 - 500 } }), never, settings, T0).memory.lastGrowthMs).toBe(T0);
    expect(classifyUnit(memory, facts({ tail: { size: 11, mtimeMs: T0 - 1000 } }), never, settings, T0).memory.lastGrowthMs).toBe(T0);
    expect(classifyUnit(memory, facts({ tail: { size: 3, mtimeMs: T0 - 1000 } }), never, settings, T0).memory).toBe(memory);
  });

  it('property: stalled(N) always has N >= threshold, and no status is ever pending', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.option(fc.record({ size: fc.integer({ min: 0, max: 5 }), mtimeMs: fc.integer({ min: T0 - 200_000, max: T0 }) }), { nil: null }),
        (threshold, quietMs, tail) => {
          const memory = { lastSize: 2, lastMtimeMs: T0 - 100_000, lastGrowthMs: T0 - quietMs };
          const outcome = classifyUnit(memory, facts({ tail }), () => 'alive', { stallThresholdS: threshold, stableWindowS: 0 }, T0);
          if (outcome.status.kind === 'stalled') expect(outcome.status.seconds).toBeGreaterThanOrEqual(threshold);
          expect(['growing', 'stalled']).toContain(outcome.status.kind);
        },
      ),
    );
  });
});

describe('decideEvent', () => {
  const ctx = { nowMs: T0, startMs: T0, timeoutS: 60, operandsComplete: true };
  const s = (kind: UnitStatus['kind']): UnitStatus => (kind === 'stalled' ? { kind, seconds: 1 } : ({ kind } as UnitStatus));

  it('priority fail > stall > all-done > timeout', () => {
    const late = { ...ctx, nowMs: T0 + 60_000 };
    expect(decideEvent([s('stalled'), s('failed-dispatch-dead')], late)).toBe('fail');
    expect(decideEvent([s('failed-fallback')], late)).toBe('fail');
    expect(decideEvent([s('done'), s('stalled')], late)).toBe('stall');
    expect(decideEvent([s('done'), s('done')], late)).toBe('all-done');
    expect(decideEvent([s('done'), s('finishing')], late)).toBe('timeout');
    expect(decideEvent([s('done'), s('growing')], ctx)).toBeNull();
  });

  it('all-done waits for the complete operand list; fail and stall do not', () => {
    const open = { ...ctx, operandsComplete: false };
    expect(decideEvent([s('done')], open)).toBeNull();
    expect(decideEvent([s('done'), s('failed-fallback')], open)).toBe('fail');
    expect(decideEvent([s('stalled')], open)).toBe('stall');
    expect(decideEvent([], ctx)).toBeNull();
  });

  it('exit codes and status words', () => {
    expect([eventExitCode('all-done'), eventExitCode('fail'), eventExitCode('stall'), eventExitCode('timeout')]).toEqual([0, 3, 3, 2]);
    expect(
      [s('done'), s('failed-fallback'), s('failed-dispatch-dead'), { kind: 'stalled', seconds: 7 } as const, s('growing'), s('finishing')].map(formatStatus),
    ).toEqual(['done', 'failed(fallback)', 'failed(dispatch-dead)', 'stalled(7s)', 'growing', 'finishing']);
  });
});

describe('small decisions', () => {
  it('unitName is shell basename', () => {
    expect(unitName('/tmp/x/prun-task-a/')).toBe('prun-task-a');
    expect(unitName('u3//')).toBe('u3');
    expect(unitName('u3')).toBe('u3');
    expect(unitName('/')).toBe('/');
  });

  it('landingOf: a non-empty file quiet for the window lands; otherwise when it would', () => {
    expect(landingOf(null, 0, T0)).toBeNull();
    expect(landingOf({ size: 0, mtimeMs: T0 - 99_000 }, 0, T0)).toBeNull();
    expect(landingOf({ size: 1, mtimeMs: T0 - 2000 }, 2, T0)).toBe('landed');
    expect(landingOf({ size: 1, mtimeMs: T0 - 1000 }, 2, T0)).toBe(T0 + 1000);
  });

  it('settings: unset or empty is the default; digits only; the message names the variable', () => {
    expect(readSettings({}, MONITOR_ENV)).toEqual({ stallThresholdS: 600, pollS: 15, timeoutS: 3600, stableWindowS: 10 });
    expect(readSettings({ PRUN_GATHER_POLL: '', AGENT_CONFIG_GATHER_TIMEOUT: '07' }, GATHER_ENV)).toEqual({ timeoutS: 7, pollS: 5, stableWindowS: 10 });
    for (const bad of ['abc', '-1', '1.5', '1e3', ' 1', '99999999999999999999']) {
      expect(() => readSettings({ PRUN_MONITOR_POLL: bad }, MONITOR_ENV)).toThrow(UsageError);
      expect(() => readSettings({ PRUN_MONITOR_POLL: bad }, MONITOR_ENV)).toThrow(/^PRUN_MONITOR_POLL /);
    }
  });

  it('parseArgs: options before operands, -- ends them, - alone means stdin', () => {
    expect(parseArgs(['--json', 'a', '--json'])).toMatchObject({ json: true, operands: ['a', '--json'] });
    expect(parseArgs(['--', '--json'])).toMatchObject({ json: false, operands: ['--json'] });
    expect(parseArgs(['-'])).toMatchObject({ stdin: true, operands: [] });
    expect(() => parseArgs(['a', '-'])).toThrow(UsageError);
    expect(() => parseArgs(['--nope'])).toThrow(/unknown option: --nope/);
  });

  it('agent callers and non-TTYs get no live view', () => {
    expect(liveViewWanted({}, true)).toBe(true);
    expect(liveViewWanted({}, false)).toBe(false);
    for (const name of ['AI_AGENT', 'CLAUDECODE', 'GEMINI_CLI', 'CODEX_SANDBOX']) {
      expect(isAgentCaller({ [name]: '1' })).toBe(true);
      expect(liveViewWanted({ [name]: '1' }, true)).toBe(false);
    }
    expect(isAgentCaller({ CLAUDECODE: '' })).toBe(false);
  });

  it('the live view rewrites its lines in place (erased line by line), coloured, cut to the terminal width', async () => {
    let written = '';
    const stream = { columns: 0, write: (text: string) => ((written += text), true) };
    const row = (name: string, status: string) => ({ name, status, elapsedMs: 3000, tailBytes: 10, growthPerS: null });
    // Each frame in synchronized output (?2026h ... ?2026l), the cursor hidden while the view is up;
    // a frame of n lines is erased line by line (ESC[2K, then ESC[1A ESC[2K n times, then column 1),
    // never to the end of the screen (ESC[J), which in tmux pushes the old frame into the scroll-back.
    const frame = (text: string) => `\x1b[?2026h${text}\x1b[?2026l`;
    const eraseTwo = '\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[G';
    const view = await LiveView.open(stream, false);
    view.render([row('u1', 'growing'), row('u2', 'done')]);
    expect(written).toBe(frame('\x1b[?25lu1 growing  3s  tail 10 B\nu2 done  3s  tail 10 B\n'));
    written = '';
    view.render([row('u1', 'stalled(3s)'), row('u2', 'done')]);
    expect(written).toBe(frame(`${eraseTwo}u1 stalled(3s)  3s  tail 10 B\nu2 done  3s  tail 10 B\n`));
    written = '';
    view.note('prun-monitor: a message');
    expect(written).toBe(`${eraseTwo}prun-monitor: a message\n`);
    written = '';
    // Nothing left to erase: the clear only shows the cursor again.
    view.clear();
    expect(written).toBe('\x1b[?25h');
    written = '';
    const coloured = await LiveView.open(stream, true);
    coloured.render([row('u1', 'failed(fallback)'), row('u2', 'done'), row('u3', 'stalled(3s)')]);
    expect(written).toBe(
      frame('\x1b[?25lu1 \x1b[31mfailed(fallback)\x1b[39m  3s  tail 10 B\nu2 \x1b[32mdone\x1b[39m  3s  tail 10 B\nu3 \x1b[33mstalled(3s)\x1b[39m  3s  tail 10 B\n'),
    );
    coloured.clear();
    written = '';
    const narrow = await LiveView.open(Object.assign(stream, { columns: 12 }), true);
    narrow.render([row('u1', 'failed(fallback)')]);
    // Cut to the 12 columns on its plain text (the colour cannot be cut through), an ellipsis last.
    expect(written).toBe(frame('\x1b[?25lu1 failed(f\u2026\n'));
    written = '';
    narrow.clear();
    expect(written).toBe('\x1b[2K\x1b[1A\x1b[2K\x1b[G\x1b[?25h');
  });
});

describe('Waker', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('falls back to its deadline timer when the system has no watches left (ENOSPC)', async () => {
    const wake = vi.fn();
    const noSpace = (): FSWatcher => {
      throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
    };
    const waker = new Waker(wake, { watch: noSpace });
    waker.watchDir('/somewhere');
    expect(waker.watchingDisabled).toBe(true);
    expect(waker.watchedDirs).toEqual([]);
    waker.wakeAt(Date.now() + 20);
    await vi.waitFor(() => expect(wake).toHaveBeenCalledTimes(1));
    waker.close();
  });

  it('a missing directory (ENOENT) is tried again later; a failing watcher is dropped', () => {
    let attempts = 0;
    const watchers: EventEmitter[] = [];
    const flaky = (): FSWatcher => {
      attempts += 1;
      if (attempts === 1) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
      const watcher = Object.assign(new EventEmitter(), { close: vi.fn() });
      watchers.push(watcher);
      return watcher as unknown as FSWatcher;
    };
    const waker = new Waker(() => {}, { watch: flaky });
    waker.watchDir('/later');
    expect(waker.watchedDirs).toEqual([]);
    expect(waker.watchingDisabled).toBe(false);
    waker.watchDir('/later');
    expect(waker.watchedDirs).toEqual(['/later']);
    watchers[0]!.emit('error', new Error('boom'));
    expect(waker.watchedDirs).toEqual([]);
    waker.close();
  });

  it('wakes on relevant names only and coalesces bursts (fake timers)', () => {
    vi.useFakeTimers();
    try {
      const wake = vi.fn();
      let listener: ((event: string, name: string | null) => void) | undefined;
      const capture = (_dir: string, l: (event: string, name: string | null) => void): FSWatcher => {
        listener = l;
        return Object.assign(new EventEmitter(), { close: () => {} }) as unknown as FSWatcher;
      };
      const waker = new Waker(wake, { watch: capture, coalesceMs: 5 });
      waker.watchFile('/d/result.md');
      listener!('change', 'other.md');
      vi.advanceTimersByTime(1000);
      expect(wake).not.toHaveBeenCalled();
      listener!('rename', 'result.md');
      listener!('change', 'result.md');
      vi.advanceTimersByTime(4);
      expect(wake).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1);
      expect(wake).toHaveBeenCalledTimes(1);
      waker.watchDir('/d', new Set(['tail']));
      listener!('change', 'tail');
      vi.advanceTimersByTime(1000);
      expect(wake).toHaveBeenCalledTimes(1);
      listener!('change', 'result-file');
      vi.advanceTimersByTime(5);
      expect(wake).toHaveBeenCalledTimes(2);
      waker.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a deadline wakes at its moment and not before; a new deadline replaces the old (fake timers)', () => {
    vi.useFakeTimers();
    try {
      const wake = vi.fn();
      const waker = new Waker(wake, { watch: () => Object.assign(new EventEmitter(), { close: () => {} }) as unknown as FSWatcher });
      waker.wakeAt(10_000, 0);
      waker.wakeAt(2_000, 0);
      // One millisecond of slack past the deadline, so the look finds the clock past it.
      vi.advanceTimersByTime(2_000);
      expect(wake).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1);
      expect(wake).toHaveBeenCalledTimes(1);
      vi.advanceTimersByTime(20_000);
      expect(wake).toHaveBeenCalledTimes(1);
      waker.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('unwatchDir closes a whole-directory watch, but keeps one that still serves a file (fake timers)', () => {
    vi.useFakeTimers();
    const wake = vi.fn();
    const listeners = new Map<string, (event: string, name: string | null) => void>();
    const closed: string[] = [];
    const capture = (dir: string, l: (event: string, name: string | null) => void): FSWatcher => {
      listeners.set(dir, l);
      return Object.assign(new EventEmitter(), { close: () => closed.push(dir) }) as unknown as FSWatcher;
    };
    const waker = new Waker(wake, { watch: capture, coalesceMs: 5 });
    waker.watchDir('/state', new Set(['tail']));
    waker.unwatchDir('/state');
    expect(closed).toEqual(['/state']);
    expect(waker.watchedDirs).toEqual([]);
    waker.watchDir('/both', new Set(['tail']));
    waker.watchFile('/both/result.md');
    waker.unwatchDir('/both');
    expect(waker.watchedDirs).toEqual(['/both']);
    listeners.get('/both')!('change', 'result-file');
    vi.advanceTimersByTime(1000);
    expect(wake).not.toHaveBeenCalled();
    listeners.get('/both')!('change', 'result.md');
    vi.advanceTimersByTime(5);
    expect(wake).toHaveBeenCalledTimes(1);
    waker.close();
  });
});
