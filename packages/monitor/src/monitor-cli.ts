import { printable } from '@prun/kit/cli';
import { formatStatus } from './classify.js';
import { LiveView, colourWanted, liveViewWanted, runWatchCli, unusableFileText, writeLine } from './cli-common.js';
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

export async function main(argv: string[]): Promise<void> {
  const view = liveViewWanted(process.env, process.stderr.isTTY === true)
    ? new LiveView(process.stderr, colourWanted(process.env))
    : undefined;
  await runWatchCli(argv, {
    spec: MONITOR_SPEC,
    operandName: '<state-dir>',
    usageFailure: (json, message, showUsage) => {
      // Coordinators parse stdout: even a usage error says so there.
      writeLine(json ? JSON.stringify({ event: 'usage-error', message }) : 'MONITOR-EVENT usage-error');
      process.stderr.write(`prun-monitor: ${message}\n`);
      if (showUsage) process.stderr.write('Usage: prun-monitor [--json] STATE_DIR... | prun-monitor [--json] -\n');
    },
    settings: () => readSettings(process.env, MONITOR_ENV),
    create: (args, settings) =>
      new MonitorRun({
        settings,
        cwd: process.cwd(),
        emit: (record) => {
          view?.clear();
          for (const line of args.json ? [jsonLine(record)] : textLines(record)) writeLine(line);
        },
        onUnusable: (file) => process.stderr.write(`prun-monitor: ${unusableFileText(file)}\n`),
        ...(view ? { onPass: (units) => view.render(units.map((u) => ({ name: u.name, status: formatStatus(u.status) }))) } : {}),
      }),
    add: (run, operand) => run.addUnit(operand),
    finish: () => view?.clear(),
  });
}
