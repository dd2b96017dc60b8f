import { commandMain, printable } from '@prun/kit/cli';
import { runWatchCli, unusableFileText, writeLine } from './cli-common.js';
import { GatherRun, type GatherRecord } from './gather.js';
import { GATHER_ENV, readSettings } from './settings.js';
import { GATHER_SPEC } from './spec.js';

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

/** kit's commandMain is its one catch, under its own name when `prun gather` hosts it too. */
export const main = commandMain('prun-gather', (argv) =>
  runWatchCli(argv, {
    spec: GATHER_SPEC,
    operandName: '<result-file>',
    // As the original: a usage error prints nothing on stdout (no usageEvent).
    settings: () => readSettings(process.env, GATHER_ENV),
    create: (args, settings) =>
      new GatherRun({
        settings,
        cwd: process.cwd(),
        emit: (record) => writeLine(format(record, args.json)),
        onUnusable: (file) => process.stderr.write(`prun-gather: ${unusableFileText(file)}\n`),
      }),
    add: (run, operand, fromStateDirLine) => (fromStateDirLine ? run.addStateDir(operand) : run.addFile(operand)),
  }),
);
