// The declaration of prun-snapshot-tail: its argparse-compatible parser, --help, completion and
// exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';
import { EXIT } from './errors.js';

export const SPEC: BinSpec = {
  name: 'prun-snapshot-tail',
  summary: "archive a unit's tail into a verified ZIP, never replacing anything",
  helpStyle: 'argparse',
  usage: ['[-h] [--version] --unit UNIT [--dest DEST | --output OUTPUT] [--json]'],
  description: `Copy one prun unit's tail into a verified two-member stored ZIP (tail.bin, manifest.json),
published by hard link so an existing file is never replaced. At most the size the tail had
when it was opened is copied; a tail still growing is cut at that size.`,
  options: [
    { long: '--unit', value: { name: 'UNIT', kind: 'dir' }, required: true, help: "the unit state directory (its 'tail' is the source)" },
    {
      long: '--dest',
      value: { name: 'DEST', kind: 'dir' },
      help: 'directory for snapshot-<UTC stamp>-<8 hex>.zip (default: $XDG_STATE_HOME/anywhere-agents/prun/snapshots, or ~/.local/state/anywhere-agents/prun/snapshots; created 0700)',
    },
    { long: '--output', value: { name: 'OUTPUT', kind: 'path' }, help: 'exact archive path (not with --dest)' },
    { long: '--json', help: 'print {"published", "manifest", "warning"} as JSON' },
  ],
  exclusive: [['--dest', '--output']],
  env: [
    { name: 'XDG_STATE_HOME', help: 'the default destination is under it' },
    { name: 'HOME', help: 'the default destination without XDG_STATE_HOME' },
  ],
  exitCodes: [
    { code: EXIT.ok, meaning: 'published' },
    { code: EXIT.usage, meaning: 'usage error, `--unit` not a directory, `--output` name that traverses' },
    { code: EXIT.collision, meaning: 'the final name already exists (left byte-identical)' },
    { code: EXIT.source, meaning: 'the tail cannot be opened or read, or is not a regular file (FIFO, device, directory)' },
    { code: EXIT.archive, meaning: 'the archive could not be built or did not validate' },
    {
      code: EXIT.publish,
      meaning:
        'destination unusable: group/world-accessible (with advice that is safe for that directory), cannot be created, no private temporary file possible; or the hard link failed for a non-collision reason (never falls back to rename/copy)',
    },
    { code: EXIT.internal, meaning: 'internal error (a bug)' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
