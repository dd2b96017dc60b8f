// The declaration of prun: its own commands here, each fronted bin's declaration from that bin's
// package. --help (`prun help CMD` too), completion and the exit-code tables come from it.
import type { BinSpec, CommandSpec } from '@prun/kit/spec';
import { TOOL_COMMANDS } from './commands.js';
import { EXIT } from './errors.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

const OWN_COMMANDS_BUT_HELP: readonly CommandSpec[] = [
  {
    name: 'batch',
    summary: 'run a whole fan-out from a JSON or YAML plan, with a ledger; resumable',
    usage: [
      'PLAN [--dir DIR] [--jobs N] [--json] [--no-quota-wait] [--quota-wait S] [CONTROLS]',
      'PLAN --dry-run [--dir DIR] [--json]',
      '--resume DIR [--jobs N] [--json] [CONTROLS]',
      '--retry-failed DIR [--jobs N] [--json] [CONTROLS]',
    ],
    description: 'CONTROLS: [--retries N] [--halt now|soon,fail=N|P%] [--on-unit-done CMD].',
    options: [
      { long: '--dir', value: { name: 'DIR', kind: 'dir' }, help: 'the new batch directory (default: ./prun-batch-<stamp>)' },
      { long: '--jobs', value: { name: 'N', kind: 'int' }, help: 'units running at once (default: the number of CPUs)' },
      { long: '--json', help: 'print the outcome as one JSON document' },
      { long: '--no-quota-wait', help: 'stop (exit 75) instead of waiting when quota refuses a unit' },
      { long: '--quota-wait', value: { name: 'S', kind: 'seconds' }, help: 'how long to wait for quota before trying again', default: '300' },
      { long: '--resume', value: { name: 'DIR', kind: 'dir' }, help: 'continue a batch after a crash or kill' },
      { long: '--retry-failed', value: { name: 'DIR', kind: 'dir' }, help: 'run the failed units of a batch again, as follow-up turns' },
      { long: '--dry-run', help: 'check everything and print the schedule (waves, mode, workspace, model, quota); start and create nothing' },
      { long: '--retries', value: { name: 'N', kind: 'int' }, help: 'run a failed or invalid unit again up to N times, as follow-up turns', default: '0' },
      { long: '--halt', value: { name: 'RULE', kind: 'string' }, help: 'now,fail=N: stop every running unit once N units failed; soon,fail=N: start no more (N or P%)' },
      { long: '--on-unit-done', value: { name: 'CMD', kind: 'command' }, help: 'run CMD (sh -c) after each unit settles, with PRUN_UNIT_ID, PRUN_UNIT_STATUS, PRUN_UNIT_RESULT, PRUN_UNIT_STATE_DIR set' },
    ],
    positionals: [{ name: 'PLAN', kind: 'file', arity: 'optional' }],
  },
  {
    name: 'cancel',
    summary: 'stop units of a batch, running or queued, whether its driver is alive or not',
    usage: ['DIR UNIT...'],
    description:
      'A running unit is stopped through its dispatcher (SIGTERM; its FALLBACK names the cancel), a queued one withdrawn; both are recorded cancelled, their dependents fail, and --resume never runs them.',
    positionals: [
      { name: 'DIR', kind: 'dir' },
      { name: 'UNIT', kind: 'string', arity: 'many', min: 1 },
    ],
  },
  {
    name: 'status',
    summary: "a batch's units and their states",
    usage: ['DIR [--json]', 'DIR --watch'],
    description: 'With --watch, the live panel of prun batch (on a terminal) until the batch ends, then the table; it only reads, never takes the batch lock.',
    options: [
      { long: '--json', help: 'one JSON document' },
      { long: '--watch', help: 'follow the batch live until it ends (read-only)' },
    ],
    positionals: [{ name: 'DIR', kind: 'dir' }],
  },
  {
    name: 'wait',
    summary: 'block until a batch has finished, whoever drives it; exit with its exit code',
    usage: ['DIR [--json]'],
    description: 'Prints the status table (or, with --json, the summary prun batch --json printed) and exits with the batch exit code.',
    options: [{ long: '--json', help: 'print the final summary as one JSON document' }],
    positionals: [{ name: 'DIR', kind: 'dir' }],
  },
  {
    name: 'log',
    summary: "a unit's worker output, rendered for a person",
    usage: ['DIR UNIT [--follow] [--raw]'],
    description: "The assistant's text and each tool call on a line of its own, from the stream events in the unit's tail.",
    options: [
      { long: '--follow', short: '-f', help: 'keep printing as the worker writes, until the unit settles' },
      { long: '--raw', help: "the tail's bytes as they are" },
    ],
    positionals: [
      { name: 'DIR', kind: 'dir' },
      { name: 'UNIT', kind: 'string' },
    ],
  },
  {
    name: 'clean',
    summary: "remove the state dirs (and with --clones the clones) of a batch's settled units",
    usage: ['DIR [--dry-run] [--snapshot] [--clones] [--json]'],
    description:
      "Only a unit the ledger records as done, failed, invalid or cancelled, whose result file is present and whose dispatcher is proven gone; only the state dirs and clones the batch recorded; symlinks are never followed. It takes the batch's driver lock, so it refuses (101) while a driver runs.",
    options: [
      { long: '--dry-run', help: 'list what would go and how many bytes; remove nothing' },
      { long: '--snapshot', help: "first archive each state dir's tail with snapshot-tail (default destination)" },
      { long: '--clones', help: "remove the settled units' throwaway clones (<DIR>/clones/<id>) too" },
      { long: '--json', help: 'one JSON document' },
    ],
    positionals: [{ name: 'DIR', kind: 'dir' }],
  },
  {
    name: 'clone',
    summary: 'a throwaway local clone for a code-writing unit (remote removed)',
    usage: ['REPO DIR'],
    description: 'Prints the absolute path of the new clone.',
    positionals: [
      { name: 'REPO', kind: 'dir' },
      { name: 'DIR', kind: 'path' },
    ],
  },
  {
    name: 'completion',
    summary: 'print the completion script of prun and every prun-* bin',
    usage: ['bash|zsh|fish'],
    description: 'bash: eval "$(prun completion bash)"; zsh: the same after compinit; fish: prun completion fish | source.',
    positionals: [{ name: 'SHELL', kind: 'choice', choices: SHELLS }],
  },
];

/** `prun help`: completion offers every command's name for its first word, prun's and the fronted bins'. */
const HELP_COMMAND: CommandSpec = {
  name: 'help',
  summary: 'the help of prun or of one command',
  usage: ['[COMMAND...]'],
  positionals: [
    { name: 'COMMAND', kind: 'string', arity: 'optional', suggest: [...OWN_COMMANDS_BUT_HELP.map((command) => command.name), 'help', ...TOOL_COMMANDS.map((tool) => tool.name)] },
    { name: 'SUBCOMMAND', kind: 'string', arity: 'many' },
  ],
};

const OWN_COMMANDS: readonly CommandSpec[] = [...OWN_COMMANDS_BUT_HELP, HELP_COMMAND];

/** prun's own part: what `prun --version` and the parse of prun's own commands need (no bin's spec loaded). */
export const OWN_SPEC: BinSpec = {
  name: 'prun',
  summary: 'Fan a coding task out to many unattended agent units and bring the results back safely.',
  usage: ['<command> [args...]'],
  jobNames: 'prun job __names',
  commands: OWN_COMMANDS,
  epilog: "The other commands exit exactly as their bins do: see prun <command> --help.",
  exitCodes: [
    { code: EXIT.ok, meaning: '`batch`, `wait`: every unit done (`--dry-run`: the plan passed every check); `cancel`: the named units are cancelled or had already settled; `status`, `log`, `clean`, `clone`, `completion`: success' },
    { code: '1-100', meaning: '`batch`, `wait`: the number of failed, invalid and cancelled units, capped at 100; `clone`: git failed (1); `clean`: something could not be archived or removed and was kept (1)' },
    {
      code: EXIT.usage,
      meaning:
        'usage error, a bad plan or setting (the message names the field, setting or path), a directory that cannot be used or is not a batch, `cancel` of a unit the batch does not have; nothing was created, run or changed',
    },
    { code: EXIT.internal, meaning: 'internal error' },
    { code: EXIT.quota, meaning: '`batch` stopped on a quota refusal under `--no-quota-wait`; resume it later' },
    { code: EXIT.busy, meaning: '`batch`, `clean`: another prun process is driving this batch directory (its pid is named)' },
    { code: EXIT.ledger, meaning: '`batch`, `cancel`, `clean`: the ledger is damaged (a bad line before the last, or missing or empty beside results or logs); nothing was changed' },
    { code: EXIT.halted, meaning: '`batch` halted by `--halt` once its failure threshold was reached; units not started stay queued (`prun batch --resume DIR` continues)' },
    { code: EXIT.abandoned, meaning: '`wait`: the batch is not finished and no prun drives it (its driver was killed or crashed); `prun batch --resume DIR` finishes it' },
    {
      code: '128+n',
      meaning: '`batch` interrupted by signal n (130 SIGINT, 143 SIGTERM, 129 SIGHUP): running units stopped and recorded interrupted; `prun batch --resume DIR` finishes the batch',
    },
  ],
};

/** Every fronted bin's declaration, loaded on demand (help and completion only). */
export async function toolSpecs(): Promise<Array<{ command: string; spec: BinSpec }>> {
  return Promise.all(
    TOOL_COMMANDS.map(async (tool) => {
      const spec = (await tool.spec()).BINS.find((candidate) => candidate.name === tool.bin);
      if (!spec) throw new Error(`${tool.bin} declares no spec`);
      return { command: tool.name, spec };
    }),
  );
}

/** The whole tree: prun's commands, then each bin under its prun command name, nested flags and all. */
export async function fullSpec(): Promise<BinSpec> {
  const tools = await toolSpecs();
  const fronted: CommandSpec[] = tools.map(({ command, spec }) => ({ ...spec, name: command }));
  const bins = tools.map(({ command, spec }) => `${command} = ${spec.name}`).join(', ');
  return {
    ...OWN_SPEC,
    commands: [...OWN_COMMANDS, ...fronted],
    epilog: `The tool commands run their bin in this process, with its own options, output and exit codes: ${bins}. ${OWN_SPEC.epilog}`,
  };
}

export const BINS: readonly BinSpec[] = [OWN_SPEC];

/** For the docs generator: prun's declaration with every fronted bin nested, as `prun completion` uses it. */
export async function allBins(): Promise<readonly BinSpec[]> {
  return [await fullSpec()];
}
