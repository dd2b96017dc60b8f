// The watch loops as a library, with fs.watch replaced by one that fails like a system out of
// inotify watches: the loops must still finish, by polling.
import { EventEmitter } from 'node:events';
import type { FSWatcher } from 'node:fs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STATE_FILES } from '@prun/unit-state';
import { GatherRun, MonitorRun, type GatherRecord, type MonitorRecord } from '../src/index.js';
import { tempDirs } from './helpers.js';

const { base } = tempDirs(afterAll);

const noWatchesLeft = (): FSWatcher => {
  throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
};

describe.concurrent('watch loops without inotify', () => {
  it('MonitorRun falls back to polling', async () => {
    const b = base();
    const dir = join(b, 'u1');
    mkdirSync(dir);
    writeFileSync(join(dir, STATE_FILES.resultFile), `${join(b, 'r.md')}\n`);
    const records: MonitorRecord[] = [];
    const run = new MonitorRun({
      // Ending 0 is the proof (no stopwatch): without watches, a loop that did not poll every
      // pollS (1 s) would reach its 5 s timeout first (exit 2), as would one polling at the 15 s default.
      settings: { stallThresholdS: 600, pollS: 1, timeoutS: 5, stableWindowS: 0 },
      cwd: b,
      emit: (record) => records.push(record),
      watch: noWatchesLeft,
    });
    run.addUnit(dir);
    run.endOperands();
    writeFileSync(join(b, 'r.md'), '# u1 result\n');
    expect(await run.finished).toBe(0);
    expect(records.map((r) => r.event)).toEqual(['start', 'all-done']);
  });

  it('GatherRun falls back to polling', async () => {
    const b = base();
    const file = join(b, 'r.md');
    const records: GatherRecord[] = [];
    const run = new GatherRun({
      settings: { timeoutS: 20, pollS: 1, stableWindowS: 0 },
      cwd: b,
      emit: (record) => records.push(record),
      watch: noWatchesLeft,
    });
    run.addFile(file);
    run.endOperands();
    writeFileSync(file, 'x\n');
    expect(await run.finished).toBe(0);
    expect(records).toEqual([
      { event: 'start', count: 1, timeoutS: 20 },
      { event: 'done', path: file },
    ]);
  });

  it('MonitorRun with an injected clock: the timeout ends the watch and names every unit', async () => {
    const b = base();
    let clock = 1_000_000;
    const records: MonitorRecord[] = [];
    const run = new MonitorRun({
      settings: { stallThresholdS: 600, pollS: 1, timeoutS: 5, stableWindowS: 0 },
      cwd: b,
      emit: (record) => records.push(record),
      watch: noWatchesLeft,
      now: () => clock,
    });
    run.addUnit(join(b, 'a'));
    run.addUnit(join(b, 'b'));
    run.endOperands();
    expect(records).toEqual([{ event: 'start', units: 2, stallThresholdS: 600, timeoutS: 5 }]);
    clock += 5000;
    run.pass();
    expect(await run.finished).toBe(2);
    expect(records[1]).toMatchObject({ event: 'timeout', units: [{ name: 'a', status: { kind: 'growing' } }, { name: 'b' }] });
  });
});

describe('MonitorRun at the stall boundary (injected clock, no watches)', () => {
  it('a unit quiet for the threshold minus 1 ms is growing; at exactly the threshold it is stalled', async () => {
    const b = base();
    const dir = join(b, 'u1');
    mkdirSync(dir);
    writeFileSync(join(dir, STATE_FILES.tail), 'frozen\n');
    let clock = 5_000_000;
    const records: MonitorRecord[] = [];
    const statuses: string[] = [];
    const run = new MonitorRun({
      settings: { stallThresholdS: 3, pollS: 30, timeoutS: 60, stableWindowS: 0 },
      cwd: b,
      emit: (record) => records.push(record),
      onPass: (units) => statuses.push(units.map((u) => u.status.kind).join()),
      watch: noWatchesLeft,
      now: () => clock,
    });
    run.addUnit(dir);
    run.endOperands();
    // First look: the tail is new, so this is its last growth.
    expect(statuses).toEqual(['growing']);
    clock += 2_999;
    run.pass();
    expect(statuses.at(-1)).toBe('growing');
    expect(records.map((r) => r.event)).toEqual(['start']);
    clock += 1;
    run.pass();
    expect(await run.finished).toBe(3);
    expect(records[1]).toMatchObject({ event: 'stall', units: [{ name: 'u1', status: { kind: 'stalled', seconds: 3 } }] });
  });
});

describe.concurrent('watch loops: no event is lost to the moment a watch is set up', () => {
  const silentWatcher = (): FSWatcher => Object.assign(new EventEmitter(), { close: () => {} }) as unknown as FSWatcher;

  it('MonitorRun looks again once a new watch is in place (a result landing just before it is not left to the poll)', async () => {
    const b = base();
    const dir = join(b, 'u1');
    const results = join(b, 'results');
    mkdirSync(dir);
    mkdirSync(results);
    const result = join(results, 'r.md');
    let stateDirListener: ((event: string, name: string | null) => void) | undefined;
    // The result lands after a look found its entry, just before its directory is watched;
    // the watcher then reports nothing, as inotify would not for an earlier write.
    const watch = (watched: string, listener: (event: string, name: string | null) => void): FSWatcher => {
      if (watched === dir) stateDirListener = listener;
      if (watched === results) writeFileSync(result, '# u1 result\n');
      return silentWatcher();
    };
    const records: MonitorRecord[] = [];
    let passes = 0;
    let secondPass!: () => void;
    const settled = new Promise<void>((resolve) => (secondPass = resolve));
    const run = new MonitorRun({
      settings: { stallThresholdS: 600, pollS: 30, timeoutS: 20, stableWindowS: 0 },
      cwd: b,
      emit: (record) => records.push(record),
      watch,
      onPass: () => {
        passes += 1;
        if (passes === 2) secondPass();
      },
    });
    run.addUnit(dir);
    run.endOperands();
    // The first looks settle (the one at the end of operands, the one the new unit asked
    // for), then the dispatcher names the result.
    await settled;
    writeFileSync(join(dir, STATE_FILES.resultFile), `${result}\n`);
    stateDirListener!('rename', STATE_FILES.resultFile);
    // Awaited, not timed: the next poll is 30 s away and the deadline 20 s, so a run that leaves
    // the result to them ends with a `timeout` record and exit code 2, not `all-done`.
    const code = await run.finished;
    expect(records.map((r) => r.event)).toEqual(['start', 'all-done']);
    expect(code).toBe(0);
  });
});
