// The declaration of prun-report-state: its parser, --help, completion and exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';

export const SORT_ORDERS = ['path', 'tail-bytes-desc'] as const;

export const SPEC: BinSpec = {
  name: 'prun-report-state',
  summary: 'read-only inventory of leftover prun-task-* state directories',
  usage: ['[--root DIR]... [--batch DIR] [--json] [--summary] [--sort path|tail-bytes-desc] [--min-tail-bytes N] [--include-legacy-pid]'],
  description: `Read-only inventory of leftover prun-task-* unit state directories: for each unit, whether
its result file is present, empty, missing or unknown, and how many bytes its tail holds.
It opens nothing for writing, creates nothing, and never blocks on a FIFO or a device.`,
  options: [
    {
      long: '--root',
      value: { name: 'DIR', kind: 'dir' },
      repeatable: true,
      help: 'a directory holding prun-task-* units (repeatable; default: the system temporary directory, TMPDIR, TEMP, TMP, /tmp, ...)',
    },
    {
      long: '--batch',
      value: { name: 'DIR', kind: 'dir' },
      help: "only the state directories this prun batch recorded in its ledger (default roots: the folders holding them; with --root, only those under the roots given)",
    },
    { long: '--json', help: 'one JSON document (schema_version 1) instead of the table' },
    { long: '--summary', help: 'add counts by result and by path state, and the two byte counters' },
    { long: '--sort', value: { name: 'ORDER', kind: 'choice', choices: SORT_ORDERS }, help: 'the order of the units', default: 'path' },
    {
      long: '--min-tail-bytes',
      value: { name: 'N', kind: 'int' },
      help: 'list only units whose tail holds at least N bytes (display only: counts, summary and exit code still cover every unit)',
    },
    { long: '--include-legacy-pid', help: 'add the recorded dispatch-pid text (never verified)' },
  ],
  epilog: `Snapshotting a tail is the only safe operation offered here. This output does not
establish that deleting, overwriting, or promoting any unit is safe.`,
  exitCodes: [
    { code: 0, meaning: 'every root was listed and every unit observed without an error' },
    { code: 1, meaning: 'some root or unit could not be fully observed; everything readable is still reported' },
    { code: 2, meaning: 'usage error (unknown option, operand, bad `--sort`, non-integer `--min-tail-bytes`, a `--batch` that is not a batch directory or whose ledger cannot be read)' },
    { code: 70, meaning: 'internal error, or the report could not be written to stdout (one line on stderr says why)' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
