import { spawn } from 'node:child_process';
import { EXIT_INTERNAL, STOP_SIGNALS, commandMain, signalExitCode } from '@prun/kit/cli';
import { z } from 'zod';
import { ArgvError, answerHelpOrVersion, parseArgv, usageMistake } from '@prun/kit/spec';
import { KEEP_ENV_VAR, parseKeepList, scrubEnv } from './index.js';
import { SPEC } from './spec.js';

const BIN = SPEC.name;

const Options = z.object({
  keep: z.array(z.string()),
  list: z.boolean(),
  json: z.boolean(),
  command: z.array(z.string()).nullable(),
});
type Options = z.infer<typeof Options>;

type Parsed = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; options: Options };

function parseArgs(argv: readonly string[]): Parsed {
  let parsed;
  try {
    parsed = parseArgv(SPEC, argv);
  } catch (error) {
    // An ArgvError is already a usage CliError; only a bare word before `--`, most likely the
    // command, gets a message that says how to pass it.
    if (!(error instanceof ArgvError) || error.kind !== 'unexpected-argument') throw error;
    throw usageMistake(SPEC, `unexpected argument '${error.word}': put -- before the command`);
  }
  if (parsed.kind !== 'run') return parsed;
  const { options, rest } = parsed;
  return {
    kind: 'run',
    options: Options.parse({
      keep: options['keep'] ?? [],
      list: options['list'] === true,
      json: options['json'] === true,
      command: rest,
    }),
  };
}

/** Runs the command with the given environment; resolves to the exit code to pass on. */
function runCommand(command: readonly string[], env: Record<string, string>): Promise<number> {
  const [file, ...args] = command as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: 'inherit', env });
    const forward = (signal: NodeJS.Signals) => {
      child.kill(signal);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, forward);
    const finish = (code: number) => {
      for (const signal of STOP_SIGNALS) process.off(signal, forward);
      resolve(code);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        process.stderr.write(`${BIN}: ${file}: command not found\n`);
        finish(127);
      } else if (error.code === 'EACCES' || error.code === 'EISDIR' || error.code === 'ENOEXEC') {
        process.stderr.write(`${BIN}: ${file}: cannot execute (${error.code})\n`);
        finish(126);
      } else {
        process.stderr.write(`${BIN}: ${file}: ${error.message}\n`);
        finish(EXIT_INTERNAL);
      }
    });
    child.once('exit', (code, signal) => {
      finish(signal !== null ? signalExitCode(signal) : (code ?? EXIT_INTERNAL));
    });
  });
}

export const main = commandMain(BIN, async (argv: string[]): Promise<number | void> => {
  const parsed = parseArgs(argv);
  if (parsed.kind !== 'run') {
    answerHelpOrVersion(SPEC, parsed, new URL('../package.json', import.meta.url));
    return;
  }
  const { options } = parsed;
  if (options.json && !options.list) throw usageMistake(SPEC, '--json only applies to --list');
  if (options.list && options.command !== null) throw usageMistake(SPEC, '--list takes no command');
  if (!options.list && options.command === null) throw usageMistake(SPEC, 'missing -- COMMAND');
  if (options.command !== null && options.command.length === 0) throw usageMistake(SPEC, 'missing command after --');

  const keepEnv = z.string().optional().parse(process.env[KEEP_ENV_VAR]);
  const keep = [...parseKeepList(keepEnv), ...options.keep.flatMap((value) => parseKeepList(value))];
  const { env, withheld } = scrubEnv(process.env, { keep });

  if (options.list) {
    process.stdout.write(
      options.json
        ? JSON.stringify({ withheld, kept: Object.keys(env).length }) + '\n'
        : withheld.map((name) => name + '\n').join(''),
    );
    return;
  }
  return runCommand(options.command as string[], env);
});
