import { formatStatus } from './classify.js';
import { LiveView, colourWanted, liveViewWanted, runWatchCli, unusableFileText, writeLine } from './cli-common.js';
import { MonitorRun, type MonitorRecord } from './monitor.js';
import { printable } from './operands.js';
import { MONITOR_ENV, readSettings } from './settings.js';

const HELP = `Usage: prun-monitor [--json] STATE_DIR...
       prun-monitor [--json] -        (state directories from stdin, one per line)

Watches unit state directories and exits on the first actionable event, printing
MONITOR-START, then MONITOR-EVENT <fail|stall|all-done|timeout> and one
UNIT <name> <status> line per operand. Stdin lines may be plain paths or
STATE-DIR <path> lines as dispatchers print them.

Options:
  --json      the same events as NDJSON
  --help      this text
  --version   the version

Environment (whole seconds):
  PRUN_STALL_THRESHOLD        no tail growth for this long is a stall (600)
  PRUN_MONITOR_POLL           longest time between two looks (15)
  PRUN_MONITOR_TIMEOUT        give up after this long (3600)
  PRUN_MONITOR_STABLE_WINDOW  a result counts once quiet this long (10)

Exit codes:
  0  all units done
  2  timeout, or usage error
  3  a unit failed or stalled
  70 internal error
`;

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
    bin: 'prun-monitor',
    help: HELP,
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
