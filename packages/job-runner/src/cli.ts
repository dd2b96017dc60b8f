// The `prun-job` bin: parse the command line, run the command, print, set the exit code.
// Each command's module is loaded only when that command runs, so a small command starts fast.
import { readFileSync } from 'node:fs';
import { CliError, closeDebuggerDoor, formatInternalError, packageVersion } from '@prun/kit/cli';
import type { Command, Context } from './commands/context.js';
import { CommandError, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE } from './errors.js';
import { timingsFromEnv } from './timing.js';

const BIN = 'prun-job';

const COMMANDS: Record<string, () => Promise<Command>> = {
  run: async () => (await import('./commands/run.js')).cmdRun,
  resume: async () => (await import('./commands/resume.js')).cmdResume,
  wait: async () => (await import('./commands/wait.js')).cmdWait,
  result: async () => (await import('./commands/result.js')).cmdResult,
  steer: async () => (await import('./commands/steer.js')).cmdSteer,
  abort: async () => (await import('./commands/abort.js')).cmdAbort,
  kill: async () => (await import('./commands/kill.js')).cmdKill,
  status: async () => (await import('./commands/status.js')).cmdStatus,
  peek: async () => (await import('./commands/peek.js')).cmdPeek,
  list: async () => (await import('./commands/list.js')).cmdList,
  profiles: async () => (await import('./commands/profiles.js')).cmdProfiles,
  rm: async () => (await import('./commands/rm.js')).cmdRm,
  completion: async () => (await import('./commands/completion.js')).cmdCompletion,
  __names: async () => (await import('./commands/completion.js')).cmdNames,
};

export const USAGE = `Usage:
  prun-job run      [options] (PROMPT | -)
  prun-job resume   NAME [--background] [--timeout S] (PROMPT | -)
  prun-job wait     NAME [--timeout S] [--json]
  prun-job result   NAME [--json]
  prun-job steer    NAME (MESSAGE | -)
  prun-job abort    NAME
  prun-job kill     (NAME | --all)
  prun-job status   NAME [--json]
  prun-job peek     NAME [-n N] [-f]
  prun-job list     [--all] [--json]
  prun-job profiles
  prun-job rm       NAME
  prun-job completion (bash | zsh)

Options for run:
  --profile P     which agent profile to use, any case (default: general-purpose)
  --name N        the job's name (default: the profile's name and 4 hex digits)
  --background    start the job and return at once; the job keeps running
  --timeout S     stop the run after S seconds of wall time (0: no limit; default
                  3600 for a background job, no limit in the foreground)
  --fork          begin from a copy of the calling agent's session ($PI_SESSION_FILE)
  --model M       model pattern for the agent (pi's --model)
  --thinking L    thinking level for the agent (pi's --thinking)
  --cwd DIR       the agent's working directory (default: this one)

Other options:
  --json          One JSON document instead of text (status, list, wait, result)
  -f, --follow    peek: keep printing progress until the job stops running

A PROMPT or MESSAGE of \`-\` is read from stdin.

Exit codes:
  0   ok (for wait and result: the job is done)
  1   failure, or the job ended other than done
  2   wait --timeout passed and the job is still running
  64  usage error
  70  internal error

Environment: MULTI_AGENT_PI_BIN (pi program), MULTI_AGENT_MAX_DEPTH (default 2),
MULTI_AGENT_TIME_SCALE, XDG_STATE_HOME, PI_CODING_AGENT_DIR, PI_SESSION_FILE.
Jobs are shared with multi_agent.py: either program can manage the other's jobs.`;

function note(message: string): void {
  process.stderr.write(`${BIN}: ${message}\n`);
}

function wantsHelp(rest: string[]): boolean {
  for (const arg of rest) {
    if (arg === '--') return false;
    if (arg === '-h' || arg === '--help') return true;
  }
  return false;
}

/** Set when stdout's reader went away: the original exits 1 on a broken pipe. */
let stdoutBroken = false;

/**
 * Write to stdout. A result block is the exception: as in the original, a reader gone by then
 * (a signal stopped a foreground run) leaves the exit code to the job's status.
 */
function write(text: string, { resultBlock = false } = {}): void {
  process.stdout.write(text, (error) => {
    if (error && (error as NodeJS.ErrnoException).code === 'EPIPE' && !resultBlock) {
      stdoutBroken = true;
      process.exitCode = 1;
    }
  });
}

/**
 * Run one prun-job command line and set process.exitCode (never process.exit). Called by the
 * bin through the kit's runBin, and in-process by `prun job`.
 */
export async function main(argv: string[]): Promise<void> {
  // Runners, waits and foreground runs live long beside agents that can signal them.
  closeDebuggerDoor();
  // Failed writes are reported to write()'s callback; this keeps them from being thrown.
  if (process.stdout.listenerCount('error') === 0) process.stdout.on('error', () => undefined);
  let code: number;
  try {
    code = await dispatch(argv);
    if (stdoutBroken) code = 1;
  } catch (error) {
    if (error instanceof CliError) {
      // As the original prints it: `multi-agent: error: ...`.
      note(`error: ${error.message}`);
      if (error.hint !== undefined) note(`hint: ${error.hint}`);
      code = error.exitCode;
    } else if ((error as NodeJS.ErrnoException | undefined)?.code === 'EPIPE') {
      code = 1;
    } else {
      process.stderr.write(formatInternalError(BIN, error));
      code = EXIT_INTERNAL;
    }
  }
  process.exitCode = code;
}

async function dispatch(argv: string[]): Promise<number> {
  if (process.platform === 'win32') throw new CommandError('Windows is not supported');
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(USAGE + '\n');
    return EXIT_USAGE;
  }
  if (command === '-h' || command === '--help' || command === 'help') {
    write(USAGE + '\n');
    return EXIT_OK;
  }
  if (command === '--version' || command === '-V') {
    write(packageVersion(new URL('../package.json', import.meta.url)) + '\n');
    return EXIT_OK;
  }
  const timings = timingsFromEnv(process.env);
  if (command === '__runner') return (await import('./runner-main.js')).runnerMain(rest, process.env);
  const load = COMMANDS[command];
  if (!load) {
    note(`unknown command: ${command} (try --help)`);
    return EXIT_USAGE;
  }
  if (wantsHelp(rest)) {
    write(USAGE + '\n');
    return EXIT_OK;
  }
  const ctx: Context = {
    env: process.env,
    timings,
    out: write,
    note,
    readStdin: () => readFileSync(0, 'utf8'),
  };
  return (await load())(rest, ctx);
}
