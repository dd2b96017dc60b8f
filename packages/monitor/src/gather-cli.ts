import { guardStdout, packageVersion, parseArgs, readStdinOperands, writeLine } from './cli-common.js';
import { GatherRun, type GatherRecord } from './gather.js';
import { GATHER_ENV, UsageError, readSettings } from './settings.js';

const BIN = 'prun-gather';

const HELP = `Usage: prun-gather [--json] RESULT_FILE...
       prun-gather [--json] -        (operands from stdin, one per line)

Waits for result files. Prints GATHER-START, then DONE <absolute path> as each
non-empty regular file has been quiet for the stable window, and exits when all
have landed, or prints TIMEOUT remaining=<K> at the timeout. A stdin line
STATE-DIR <dir> stands for the result that state directory's result-file names.

Options:
  --json      the same events as NDJSON
  --help      this text
  --version   the version

Environment (whole seconds):
  AGENT_CONFIG_GATHER_TIMEOUT  give up after this long (3600)
  PRUN_GATHER_POLL             longest time between two looks (5)
  PRUN_GATHER_STABLE_WINDOW    a file lands once quiet this long (10)

Exit codes:
  0  every file landed
  2  timeout, or usage error
  70 internal error
`;

function format(record: GatherRecord, json: boolean): string {
  if (json) {
    if (record.event === 'start') return JSON.stringify({ event: 'start', count: record.count, timeout: record.timeoutS });
    return JSON.stringify(record);
  }
  if (record.event === 'start') return `GATHER-START count=${record.count} timeout=${record.timeoutS}s`;
  if (record.event === 'done') return `DONE ${record.path}`;
  return `TIMEOUT remaining=${record.remaining}`;
}

function usageFailure(message: string): void {
  process.stderr.write(`${BIN}: ${message}\nusage: prun-gather [--json] <result-file> [<result-file> ...] | prun-gather [--json] -\n`);
  process.exitCode = 2;
}

export async function main(argv: string[]): Promise<void> {
  guardStdout();
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
    const settings = readSettings(process.env, GATHER_ENV);
    if (!args.stdin && args.operands.length === 0) {
      usageFailure('need at least one <result-file>');
      return;
    }
    const run = new GatherRun({ settings, cwd: process.cwd(), emit: (record) => writeLine(format(record, args.json)) });
    if (args.stdin) {
      let count = 0;
      run.onStop(
        readStdinOperands(
          process.stdin,
          (operand, fromStateDirLine) => {
            count += 1;
            if (fromStateDirLine) run.addStateDir(operand);
            else run.addFile(operand);
          },
          () => {
            if (count === 0) {
              run.stop(2);
              usageFailure('no result files on stdin');
              return;
            }
            run.endOperands();
          },
        ),
      );
    } else {
      for (const operand of args.operands) run.addFile(operand);
      run.endOperands();
    }
    const code = await run.finished;
    if (process.exitCode === undefined) process.exitCode = code;
  } catch (error) {
    if (error instanceof UsageError) {
      usageFailure(error.message);
      return;
    }
    process.stderr.write(`${BIN}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 70;
  }
}
