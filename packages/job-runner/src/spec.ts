// The declaration of prun-job: its --help, completion and exit-code tables come from here.
import type { BinSpec, CommandSpec, OptionSpec, PositionalSpec } from '@prun/kit/spec';
import { EXIT_FAIL, EXIT_INTERNAL, EXIT_OK, EXIT_STILL_RUNNING, EXIT_USAGE } from './errors.js';

const JSON_OPTION: OptionSpec = { long: '--json', help: 'one JSON document instead of text' };
const NAME: PositionalSpec = { name: 'NAME', kind: 'job-name' };
const TIMEOUT_RUN: OptionSpec = {
  long: '--timeout',
  value: { name: 'S', kind: 'seconds' },
  help: 'stop the run after S seconds of wall time (0: no limit; default 3600 for a background job, no limit in the foreground)',
};
const BACKGROUND: OptionSpec = { long: '--background', help: 'start the job and return at once; the job keeps running' };

const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'run',
    summary: 'start a new job with a prompt',
    usage: ['[options] (PROMPT | -)'],
    options: [
      { long: '--profile', value: { name: 'P', kind: 'string' }, help: 'which agent profile to use, any case', default: 'general-purpose' },
      { long: '--name', value: { name: 'N', kind: 'string' }, help: "the job's name (default: the profile's name and 4 hex digits)" },
      BACKGROUND,
      TIMEOUT_RUN,
      { long: '--fork', help: "begin from a copy of the calling agent's session ($PI_SESSION_FILE)" },
      { long: '--model', value: { name: 'M', kind: 'string' }, help: "model pattern for the agent (pi's --model)" },
      { long: '--thinking', value: { name: 'L', kind: 'string' }, help: "thinking level for the agent (pi's --thinking)" },
      { long: '--cwd', value: { name: 'DIR', kind: 'dir' }, help: "the agent's working directory (default: this one)" },
    ],
    positionals: [{ name: 'PROMPT', kind: 'string' }],
  },
  {
    name: 'resume',
    summary: 'give a finished job a new prompt in the same session',
    usage: ['NAME [--background] [--timeout S] (PROMPT | -)'],
    options: [BACKGROUND, TIMEOUT_RUN],
    positionals: [NAME, { name: 'PROMPT', kind: 'string' }],
  },
  {
    name: 'wait',
    summary: 'wait until the job stops running',
    usage: ['NAME [--timeout S] [--json]'],
    options: [{ long: '--timeout', value: { name: 'S', kind: 'seconds' }, help: 'give up after S seconds (exit 2)' }, JSON_OPTION],
    positionals: [NAME],
  },
  { name: 'result', summary: "print the job's final answer", usage: ['NAME [--json]'], options: [JSON_OPTION], positionals: [NAME] },
  { name: 'steer', summary: 'send a running job a message', usage: ['NAME (MESSAGE | -)'], positionals: [NAME, { name: 'MESSAGE', kind: 'string' }] },
  { name: 'abort', summary: "abort the job's current turn", usage: ['NAME'], positionals: [NAME] },
  {
    name: 'kill',
    summary: 'stop a job (or every job of this project)',
    usage: ['(NAME | --all)'],
    options: [{ long: '--all', help: 'every running job of this project' }],
    positionals: [{ ...NAME, arity: 'optional' }],
  },
  { name: 'status', summary: "the job's state", usage: ['NAME [--json]'], options: [JSON_OPTION], positionals: [NAME] },
  {
    name: 'peek',
    summary: "the job's recent progress",
    usage: ['NAME [-n N] [-f]'],
    options: [
      { long: '-n', value: { name: 'N', kind: 'int' }, help: 'how many lines of progress' },
      { long: '--follow', short: '-f', help: 'keep printing progress until the job stops running' },
    ],
    positionals: [NAME],
  },
  {
    name: 'list',
    summary: "this project's jobs",
    usage: ['[--all] [--json]'],
    options: [{ long: '--all', help: 'include finished jobs' }, JSON_OPTION],
  },
  { name: 'profiles', summary: 'the agent profiles a job can use', usage: [''] },
  { name: 'rm', summary: 'remove a stopped job and its session files', usage: ['NAME'], positionals: [NAME] },
  {
    name: 'completion',
    summary: 'print a shell completion script',
    usage: ['(bash | zsh | fish)'],
    positionals: [{ name: 'SHELL', kind: 'choice', choices: ['bash', 'zsh', 'fish'] }],
  },
  { name: '__names', summary: 'job names of this project, one a line (for completion)', hidden: true },
];

export const SPEC: BinSpec = {
  name: 'prun-job',
  summary: 'named pi agent jobs: run, resume, wait, result, steer, abort, kill, list',
  // One line per command, from the commands' own usage.
  usage: COMMANDS.filter((command) => !command.hidden).map((command) => `${command.name.padEnd(8)} ${command.usage?.[0] ?? ''}`.trimEnd()),
  usageExit: EXIT_USAGE,
  // Its Python original's parser messages, which coordinators match (kit words every other bin).
  argvDialect: 'multi-agent',
  jobNames: 'prun-job __names',
  commands: COMMANDS,
  epilog: 'A PROMPT or MESSAGE of `-` is read from stdin.\nJobs are shared with multi_agent.py: either program can manage the other\'s jobs.',
  env: [
    { name: 'MULTI_AGENT_PI_BIN', help: 'the pi program', default: 'pi' },
    { name: 'MULTI_AGENT_MAX_DEPTH', help: 'how deep jobs may start jobs', default: '2' },
    { name: 'MULTI_AGENT_TIME_SCALE', help: 'scales every internal wait (tests)' },
    { name: 'XDG_STATE_HOME', help: 'jobs live under it' },
    { name: 'PI_CODING_AGENT_DIR', help: "pi's configuration directory" },
    { name: 'PI_SESSION_FILE', help: 'the calling session, for --fork' },
  ],
  exitCodes: [
    { code: EXIT_OK, meaning: 'ok; for `run`, `wait`, `result`: the job is `done`' },
    { code: EXIT_FAIL, meaning: 'failure, or the job ended other than `done`' },
    { code: EXIT_STILL_RUNNING, meaning: '`wait --timeout` passed and the job is still running' },
    { code: EXIT_USAGE, meaning: 'usage error (bad option, name or value)' },
    { code: EXIT_INTERNAL, meaning: 'internal error' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
