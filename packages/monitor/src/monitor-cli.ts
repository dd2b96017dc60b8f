import { formatStatus } from './classify.js';
import {
  LiveView,
  colourWanted,
  guardStdout,
  liveViewWanted,
  packageVersion,
  parseArgs,
  readStdinOperands,
  writeLine,
} from './cli-common.js';
import { MonitorRun, type MonitorRecord } from './monitor.js';
import { MONITOR_ENV, UsageError, readSettings } from './settings.js';

const BIN = 'prun-monitor';

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
  return [`MONITOR-EVENT ${record.event}`, ...record.units.map((u) => `UNIT ${u.name} ${formatStatus(u.status)}`)];
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

function usageFailure(json: boolean, message: string, showUsage: boolean): void {
  writeLine(json ? JSON.stringify({ event: 'usage-error', message }) : 'MONITOR-EVENT usage-error');
  process.stderr.write(`${BIN}: ${message}\n`);
  if (showUsage) process.stderr.write('Usage: prun-monitor [--json] STATE_DIR... | prun-monitor [--json] -\n');
  process.exitCode = 2;
}

export async function main(argv: string[]): Promise<void> {
  guardStdout();
  const json = argv.slice(0, argv.indexOf('--') === -1 ? argv.length : argv.indexOf('--')).includes('--json');
  try {
    const args = parseArgs(argv);
    if (args.help) {
      process.stdout.write(HELP);
      return;
    }
    if (args.version) {
      writeLine(packageVersion());
      return;
    }
    const settings = readSettings(process.env, MONITOR_ENV);
    if (!args.stdin && args.operands.length === 0) {
      usageFailure(json, 'need at least one <state-dir>', true);
      return;
    }
    const view = liveViewWanted(process.env, process.stderr.isTTY === true)
      ? new LiveView(process.stderr, colourWanted(process.env))
      : undefined;
    const run = new MonitorRun({
      settings,
      cwd: process.cwd(),
      emit: (record) => {
        view?.clear();
        for (const line of args.json ? [jsonLine(record)] : textLines(record)) writeLine(line);
      },
      ...(view ? { onPass: (units) => view.render(units.map((u) => ({ name: u.name, status: formatStatus(u.status) }))) } : {}),
    });
    if (args.stdin) {
      let count = 0;
      const stopReading = readStdinOperands(
        process.stdin,
        (operand) => {
          count += 1;
          run.addUnit(operand);
        },
        () => {
          if (count === 0) {
            run.stop(2);
            usageFailure(args.json, 'no state directories on stdin', false);
            return;
          }
          run.endOperands();
        },
      );
      run.onStop(stopReading);
    } else {
      for (const operand of args.operands) run.addUnit(operand);
      run.endOperands();
    }
    const code = await run.finished;
    view?.clear();
    if (process.exitCode === undefined) process.exitCode = code;
  } catch (error) {
    if (error instanceof UsageError) {
      usageFailure(json, error.message, false);
      return;
    }
    process.stderr.write(`${BIN}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 70;
  }
}
