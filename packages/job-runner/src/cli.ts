// The `prun-job` bin: parse the command line, run the command, print, set the exit code.
// Each command's module is loaded only when that command runs, so a small command starts fast.
import { readFileSync } from 'node:fs';
import { closeDebuggerDoor, commandMain, markOutputFinal, packageVersion } from '@prun/kit/cli';
import { commandAt, renderHelp } from '@prun/kit/spec';
import type { Command, Context } from './commands/context.js';
import { CommandError, EXIT_OK, EXIT_USAGE } from './errors.js';
import { SPEC } from './spec.js';
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

/**
 * Write to stdout. A result block is the exception to the broken-pipe exit 1 (kit's EPIPE policy,
 * brokenPipeExitCode): as in the original, a reader gone by then (a signal stopped a foreground
 * run) leaves the exit code to the job's status.
 */
function write(text: string, { resultBlock = false } = {}): void {
  if (resultBlock) markOutputFinal();
  process.stdout.write(text);
}

/**
 * Run one prun-job command line and set process.exitCode (never process.exit). Called by the
 * bin through the kit's runBin, and in-process by `prun job`. Kit's one catch reports a failure
 * as the original prints it (`prun-job: error: ...`, then `prun-job: hint: ...`), and a reader
 * that went away from stdout makes the exit code 1, as the original's does.
 */
export const main = commandMain(
  BIN,
  (argv) => {
    // Runners, waits and foreground runs live long beside agents that can signal them.
    closeDebuggerDoor();
    return dispatch(argv);
  },
  { brokenPipeExitCode: 1, errorLabel: 'error: ' },
);

async function dispatch(argv: string[]): Promise<number> {
  if (process.platform === 'win32') throw new CommandError('Windows is not supported');
  const [command, ...rest] = argv;
  if (command === undefined) {
    process.stderr.write(renderHelp(SPEC));
    return EXIT_USAGE;
  }
  if (command === '-h' || command === '--help' || command === 'help') {
    write(renderHelp(SPEC));
    return EXIT_OK;
  }
  if (command === '--version' || command === '-V') {
    write(packageVersion(new URL('../package.json', import.meta.url)) + '\n');
    return EXIT_OK;
  }
  const timings = timingsFromEnv(process.env);
  const load = COMMANDS[command];
  if (!load) {
    note(`unknown command: ${command} (try --help)`);
    return EXIT_USAGE;
  }
  if (wantsHelp(rest)) {
    write(renderHelp(SPEC, commandAt(SPEC, [command]) ? [command] : []));
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
