import { commandMain, printable } from '@prun/kit/cli';
import { formatStatus } from './classify.js';
import { join } from 'node:path';
import { STATE_FILES } from '@prun/unit-state';
import { runWatchCli, unusableFileText, writeLine } from './cli-common.js';
import { GrowthMeter, LiveView, liveViewOn } from './live.js';
import { statRegularFile } from './observe.js';
import { MonitorRun, type MonitorRecord } from './monitor.js';
import { MONITOR_ENV, readSettings } from './settings.js';
import { MONITOR_SPEC } from './spec.js';

function textLines(record: MonitorRecord): string[] {
  if (record.event === 'start') {
    return [`MONITOR-START units=${record.units} stall-threshold=${record.stallThresholdS}s timeout=${record.timeoutS}s`];
  }
  return [`MONITOR-EVENT ${record.event}`, ...record.units.map((u) => `UNIT ${printable(u.name)} ${formatStatus(u.status)}`)];
}

function jsonLine(record: MonitorRecord): string {
  if (record.event === 'start') {
    return JSON.stringify({
      event: 'start',
      units: record.units,
      stall_threshold: record.stallThresholdS,
      timeout: record.timeoutS,
    });
  }
  return JSON.stringify({
    event: record.event,
    units: record.units.map((u) => ({
      unit: u.name,
      status: formatStatus(u.status),
      state_dir: u.stateDir,
      result: u.resultPath,
    })),
  });
}

/** How often the live view redraws (elapsed times and tail growth move between looks). */
const LIVE_TICK_MS = 1000;

/**
 * Feeds the live view: the statuses of the last look, and each tail's size and growth stated
 * afresh at every tick (the watch itself never wakes for tail writes).
 */
class LiveDriver {
  readonly #meters: GrowthMeter[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly view: LiveView,
    private readonly run: () => MonitorRun | undefined,
  ) {}

  draw(): void {
    const run = this.run();
    if (run === undefined) return;
    const nowMs = Date.now();
    const dirs = run.stateDirs;
    const rows = run.reports.map((report, index) => {
      const meter = (this.#meters[index] ??= new GrowthMeter());
      const tailBytes = statRegularFile(join(dirs[index]!, STATE_FILES.tail))?.size ?? null;
      return {
        name: report.name,
        status: formatStatus(report.status),
        elapsedMs: nowMs - report.joinedAtMs,
        tailBytes,
        growthPerS: meter.sample(nowMs, tailBytes),
      };
    });
    this.view.render(rows);
    if (this.#timer === undefined) this.#timer = setInterval(() => this.draw(), LIVE_TICK_MS).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.view.clear();
  }
}

/** kit's commandMain is its one catch, under its own name when `prun monitor` hosts it too. */
export const main = commandMain('prun-monitor', async (argv) => {
  let view: LiveView | undefined;
  let live: LiveDriver | undefined;
  let run: MonitorRun | undefined;
  const note = (line: string): void => {
    if (view) view.note(line);
    else process.stderr.write(`${line}\n`);
  };
  await runWatchCli(argv, {
    spec: MONITOR_SPEC,
    operandName: '<state-dir>',
    // Coordinators parse stdout: even a usage error says so there.
    usageEvent: (json, message) => writeLine(json ? JSON.stringify({ event: 'usage-error', message }) : 'MONITOR-EVENT usage-error'),
    settings: () => readSettings(process.env, MONITOR_ENV),
    // The view's terminal module loads only for a watch that draws one (not for --help or a usage error).
    prepare: async () => {
      if (!liveViewOn(process.env, process.stderr.isTTY === true)) return;
      view = await LiveView.open(process.stderr, true);
      live = new LiveDriver(view, () => run);
    },
    create: (args, settings) => {
      const driver = live;
      run = new MonitorRun({
        settings,
        cwd: process.cwd(),
        emit: (record) => {
          view?.clear();
          for (const line of args.json ? [jsonLine(record)] : textLines(record)) writeLine(line);
        },
        onUnusable: (file) => note(`prun-monitor: ${unusableFileText(file)}`),
        ...(driver ? { onPass: () => driver.draw() } : {}),
      });
      return run;
    },
    add: (watch, operand) => watch.addUnit(operand),
    finish: () => live?.stop(),
    note,
  });
});
