// The declaration of prun-env-scrub: its parser, --help, completion and exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';
import { KEEP_ENV_VAR } from './index.js';

export const SPEC: BinSpec = {
  name: 'prun-env-scrub',
  summary: 'run a command with secret-shaped variables withheld, or list them',
  usage: ['[--keep NAME,...] -- COMMAND [ARG...]', '--list [--json] [--keep NAME,...]'],
  description: `Runs COMMAND with secret-shaped variables removed from its environment: every name
containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, APIKEY or AUTH
(case-insensitive), and every name starting AWS_. ANTIGRAVITY_* is always kept, and so
are the names in ${KEEP_ENV_VAR} and --keep (comma-separated, case-insensitive).
--list prints the names that would be withheld, one per line; values are never printed.`,
  dashDash: 'command',
  options: [
    { long: '--keep', value: { name: 'NAMES', kind: 'string' }, repeatable: true, help: `also let these names through (repeatable; adds to ${KEEP_ENV_VAR})` },
    { long: '--list', help: 'print the withheld names instead of running a command' },
    { long: '--json', help: 'with --list: print {"withheld": [...], "kept": N}' },
  ],
  env: [{ name: KEEP_ENV_VAR, help: 'comma-separated names let through the scrub' }],
  exitCodes: [
    { code: 0, meaning: '`--list`, `--help`, `--version`' },
    { code: 'N', meaning: "the command's own exit code" },
    { code: '128+n', meaning: 'the command was killed by signal n (e.g. 137 for SIGKILL)' },
    { code: 2, meaning: 'usage error (no `--`, nothing after `--`, unknown option, `--json` without `--list`)' },
    { code: 126, meaning: 'the command exists but cannot be executed (one message line)' },
    { code: 127, meaning: 'the command was not found (one message line: `prun-env-scrub: <cmd>: command not found`)' },
    { code: 70, meaning: 'internal error' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
