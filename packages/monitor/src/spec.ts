// The declarations of prun-monitor and prun-gather: their parser, --help, completion and
// exit-code tables come from here.
import type { BinSpec, OptionSpec } from '@prun/kit/spec';
import { GATHER_ENV, MONITOR_ENV } from './settings.js';

const OPTIONS: readonly OptionSpec[] = [{ long: '--json', help: 'the same events as NDJSON' }];

export const MONITOR_SPEC: BinSpec = {
  name: 'prun-monitor',
  summary: 'watch state dirs; wake on the first failure, stall, all-done or timeout',
  usage: ['[--json] STATE_DIR...', '[--json] -        (state directories from stdin, one per line)'],
  description: `Watches unit state directories and exits on the first actionable event, printing
MONITOR-START, then MONITOR-EVENT <fail|stall|all-done|timeout> and one
UNIT <name> <status> line per operand. Stdin lines may be plain paths or
STATE-DIR <path> lines as dispatchers print them.`,
  optionsFirst: true,
  options: OPTIONS,
  positionals: [{ name: 'STATE_DIR', kind: 'dir', arity: 'many' }],
  env: [
    { name: MONITOR_ENV.stallThresholdS[0], help: 'seconds without tail growth that make a stall', default: String(MONITOR_ENV.stallThresholdS[1]) },
    { name: MONITOR_ENV.pollS[0], help: 'longest time between two looks, in seconds', default: String(MONITOR_ENV.pollS[1]) },
    { name: MONITOR_ENV.timeoutS[0], help: 'give up after this many seconds', default: String(MONITOR_ENV.timeoutS[1]) },
    { name: MONITOR_ENV.stableWindowS[0], help: 'a result counts once quiet this many seconds', default: String(MONITOR_ENV.stableWindowS[1]) },
  ],
  exitCodes: [
    { code: 0, meaning: '`MONITOR-EVENT all-done`' },
    { code: 3, meaning: '`MONITOR-EVENT fail` or `stall`' },
    {
      code: 2,
      meaning: '`MONITOR-EVENT timeout`, or a usage error (`MONITOR-EVENT usage-error`: no operands, unknown option, a setting that is not a non-negative integer)',
    },
    { code: 70, meaning: 'internal error' },
  ],
};

export const GATHER_SPEC: BinSpec = {
  name: 'prun-gather',
  summary: 'wait until result files have landed and gone quiet',
  usage: ['[--json] RESULT_FILE...', '[--json] -        (operands from stdin, one per line)'],
  description: `Waits for result files. Prints GATHER-START, then DONE <absolute path> as each
non-empty regular file has been quiet for the stable window, and exits when all
have landed, or prints TIMEOUT remaining=<K> at the timeout. A stdin line
STATE-DIR <dir> stands for the result that state directory's result-file names.`,
  optionsFirst: true,
  options: OPTIONS,
  positionals: [{ name: 'RESULT_FILE', kind: 'file', arity: 'many' }],
  env: [
    { name: GATHER_ENV.timeoutS[0], help: 'give up after this many seconds', default: String(GATHER_ENV.timeoutS[1]) },
    { name: GATHER_ENV.pollS[0], help: 'longest time between two looks, in seconds', default: String(GATHER_ENV.pollS[1]) },
    { name: GATHER_ENV.stableWindowS[0], help: 'a file lands once quiet this many seconds', default: String(GATHER_ENV.stableWindowS[1]) },
  ],
  exitCodes: [
    { code: 0, meaning: 'every result landed' },
    { code: 2, meaning: '`TIMEOUT remaining=K`, or a usage error' },
    { code: 70, meaning: 'internal error' },
  ],
};

export const BINS: readonly BinSpec[] = [MONITOR_SPEC, GATHER_SPEC];
