/**
 * The bins `prun` fronts. Each runs in this process through its package's `./cli` entry, so
 * arguments, output and exit codes are the bin's own, byte for byte, and a foreground
 * `prun job run` still dies with its caller.
 */
export interface ToolCommand {
  name: string;
  bin: string;
  load: () => Promise<{ main: (argv: string[]) => Promise<void> }>;
  summary: string;
  options: string[];
}

export const TOOL_COMMANDS: ToolCommand[] = [
  {
    name: 'dispatch',
    bin: 'prun-dispatch-agy',
    load: () => import('@prun/dispatcher-agy/cli'),
    summary: 'run one unit through agy; prints STATE-DIR, publishes the result or a FALLBACK',
    options: ['--prompt-file', '--result-file', '--unit-id', '--mode', '--add-dir', '--continue-from', '--help'],
  },
  {
    name: 'monitor',
    bin: 'prun-monitor',
    load: () => import('@prun/monitor/monitor-cli'),
    summary: 'watch state dirs; wake on the first failure, stall, all-done or timeout',
    options: ['--json', '--help', '--version', '-'],
  },
  {
    name: 'gather',
    bin: 'prun-gather',
    load: () => import('@prun/monitor/gather-cli'),
    summary: 'wait until result files have landed and gone quiet',
    options: ['--json', '--help', '--version', '-'],
  },
  {
    name: 'report-state',
    bin: 'prun-report-state',
    load: () => import('@prun/report-state/cli'),
    summary: 'read-only inventory of leftover prun-task-* state directories',
    options: ['--root', '--json', '--summary', '--sort', '--min-tail-bytes', '--include-legacy-pid', '--help', '--version'],
  },
  {
    name: 'snapshot-tail',
    bin: 'prun-snapshot-tail',
    load: () => import('@prun/snapshot-tail/cli'),
    summary: "archive a unit's tail into a verified ZIP, never replacing anything",
    options: ['--unit', '--dest', '--output', '--json', '--help', '--version'],
  },
  {
    name: 'quota',
    bin: 'prun-quota',
    load: () => import('@prun/quota/cli'),
    summary: 'quota readout, refresh, and the routing decision for a model',
    options: ['refresh', 'route', '--force', '--model', '--json', '--help', '--version'],
  },
  {
    name: 'models',
    bin: 'prun-model-resolve',
    load: () => import('@prun/model-resolve/cli'),
    summary: 'resolve a model template to the newest listed model of its family',
    options: ['--listing', '--json', '--help', '--version'],
  },
  {
    name: 'env',
    bin: 'prun-env-scrub',
    load: () => import('@prun/env-scrub/cli'),
    summary: 'run a command with secret-shaped variables withheld, or list them',
    options: ['--keep', '--list', '--json', '--help', '--version', '--'],
  },
  {
    name: 'job',
    bin: 'prun-job',
    load: () => import('@prun/job-runner/cli'),
    summary: 'named pi agent jobs: run, resume, wait, result, steer, abort, kill, list',
    options: ['run', 'resume', 'wait', 'result', 'steer', 'abort', 'kill', 'status', 'peek', 'list', 'profiles', 'rm', '--help'],
  },
];

/** Commands only the whole can do. */
export const OWN_COMMANDS = [
  {
    name: 'batch',
    usage: 'batch PLAN [--dir DIR] [--jobs N] [--json] [--no-quota-wait] [--quota-wait S] | batch --resume DIR | batch --retry-failed DIR',
    summary: 'run a whole fan-out from a JSON or YAML plan, with a ledger; resumable',
    options: ['--dir', '--jobs', '--json', '--no-quota-wait', '--quota-wait', '--resume', '--retry-failed', '--help'],
  },
  { name: 'status', usage: 'status DIR [--json]', summary: "a batch's units and their states", options: ['--json', '--help'] },
  { name: 'clone', usage: 'clone REPO DIR', summary: 'a throwaway local clone for a code-writing unit (remote removed)', options: ['--help'] },
  { name: 'completion', usage: 'completion bash|zsh|fish', summary: 'print a shell completion script', options: ['bash', 'zsh', 'fish'] },
] as const;
