import type { BinSpec } from '@prun/kit/spec';

/** A small bin with nested commands and every value kind, the shape the real bins declare. */
export const DEMO: BinSpec = {
  name: 'demo-bin',
  summary: 'a demonstration bin',
  description: 'Does demonstration things.',
  jobNames: 'printf "%s\\n" alpha beta',
  options: [
    { long: '--json', help: 'print JSON' },
    { long: '--listing', value: { name: 'FILE', kind: 'file' }, help: 'read the listing from FILE' },
  ],
  env: [{ name: 'DEMO_TIMEOUT', help: 'seconds to wait', default: '60' }],
  commands: [
    {
      name: 'job',
      summary: 'job things',
      commands: [
        {
          name: 'run',
          summary: 'run a job',
          usage: ['[options] (PROMPT | -)'],
          options: [
            { long: '--cwd', value: { name: 'DIR', kind: 'dir' }, help: 'working directory' },
            { long: '--mode', value: { name: 'MODE', kind: 'choice', choices: ['plan', 'accept-edits'] }, help: 'mode' },
            { long: '--timeout', value: { name: 'S', kind: 'seconds' }, help: 'limit', default: '3600' },
            { long: '--count', short: '-n', value: { name: 'N', kind: 'int' }, help: 'lines' },
            { long: '--add-dir', value: { name: 'DIR', kind: 'dir' }, repeatable: true, help: 'extra directory' },
            { long: '--background', help: 'return at once' },
          ],
          positionals: [{ name: 'PROMPT', kind: 'string' }],
        },
        { name: 'wait', summary: 'wait for a job', positionals: [{ name: 'NAME', kind: 'job-name' }] },
        { name: '__names', summary: 'job names', hidden: true },
      ],
    },
    { name: 'exec', summary: 'run a command', dashDash: 'command', options: [{ long: '--keep', value: { name: 'NAMES', kind: 'string' }, help: 'keep' }] },
    { name: 'watch', summary: 'watch dirs', optionsFirst: true, positionals: [{ name: 'STATE_DIR', kind: 'dir', arity: 'many', min: 1 }] },
  ],
  exitCodes: [
    { code: 0, meaning: 'success' },
    { code: 2, meaning: 'usage error' },
    { code: '128+n', meaning: 'killed by signal `n`' },
  ],
};
