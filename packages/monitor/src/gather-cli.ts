import { runWatchCli, unusableFileText, writeLine } from './cli-common.js';
import { GatherRun, type GatherRecord } from './gather.js';
import { printable } from './operands.js';
import { GATHER_ENV, readSettings } from './settings.js';

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
  // A path with a newline must not print as two lines (a forged `DONE` or `TIMEOUT`).
  if (record.event === 'done') return `DONE ${printable(record.path)}`;
  return `TIMEOUT remaining=${record.remaining}`;
}

export async function main(argv: string[]): Promise<void> {
  await runWatchCli(argv, {
    bin: 'prun-gather',
    help: HELP,
    operandName: '<result-file>',
    // As the original: a usage error prints nothing on stdout.
    usageFailure: (_json, message) => {
      process.stderr.write(`prun-gather: ${message}\n`);
      process.stderr.write('usage: prun-gather [--json] <result-file> [<result-file> ...] | prun-gather [--json] -\n');
    },
    settings: () => readSettings(process.env, GATHER_ENV),
    create: (args, settings) =>
      new GatherRun({
        settings,
        cwd: process.cwd(),
        emit: (record) => writeLine(format(record, args.json)),
        onUnusable: (file) => process.stderr.write(`prun-gather: ${unusableFileText(file)}\n`),
      }),
    add: (run, operand, fromStateDirLine) => (fromStateDirLine ? run.addStateDir(operand) : run.addFile(operand)),
  });
}
