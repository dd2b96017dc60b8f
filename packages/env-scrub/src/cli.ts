import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { z } from 'zod';
import { KEEP_ENV_VAR, parseKeepList, scrubEnv } from './index.js';

const BIN = 'prun-env-scrub';

const HELP = `Usage:
  ${BIN} [--keep NAME,...] -- COMMAND [ARG...]
  ${BIN} --list [--json] [--keep NAME,...]

Runs COMMAND with secret-shaped variables removed from its environment: every name
containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, APIKEY or AUTH
(case-insensitive), and every name starting AWS_. ANTIGRAVITY_* is always kept, and so
are the names in ${KEEP_ENV_VAR} and --keep (comma-separated, case-insensitive).
--list prints the names that would be withheld, one per line; values are never printed.

Options:
  --keep NAMES   also let these names through (repeatable; adds to ${KEEP_ENV_VAR})
  --list         print the withheld names instead of running a command
  --json         with --list: print {"withheld": [...], "kept": N}
  -h, --help     show this help
  --version      print the version

Exit codes:
  0        --list, --help, --version
  N        COMMAND's own exit code
  128+n    COMMAND was killed by signal n
  2        usage error
  70       internal error
  126      COMMAND could not be executed (permission denied)
  127      COMMAND was not found
`;

class UsageError extends Error {}

const Options = z.object({
  keep: z.array(z.string()),
  list: z.boolean(),
  json: z.boolean(),
  help: z.boolean(),
  version: z.boolean(),
  command: z.array(z.string()).nullable(),
});
type Options = z.infer<typeof Options>;

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { keep: [], list: false, json: false, help: false, version: false, command: null };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--') {
      options.command = argv.slice(i + 1);
      break;
    }
    if (arg === '--keep' || arg.startsWith('--keep=')) {
      const value = arg === '--keep' ? argv[(i += 1)] : arg.slice('--keep='.length);
      if (value === undefined) throw new UsageError('--keep needs a value (comma-separated names)');
      options.keep.push(value);
    } else if (arg === '--list') options.list = true;
    else if (arg === '--json') options.json = true;
    else if (arg === '-h' || arg === '--help') options.help = true;
    else if (arg === '--version') options.version = true;
    else if (arg.startsWith('-')) throw new UsageError(`unknown option: ${arg}`);
    else throw new UsageError(`unexpected argument '${arg}': put -- before the command`);
  }
  return Options.parse(options);
}

function packageVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return z.object({ version: z.string() }).parse(raw).version;
}

function exitCodeForSignal(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 0);
}

const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Runs the command with the given environment; resolves to the exit code to pass on. */
function runCommand(command: readonly string[], env: Record<string, string>): Promise<number> {
  const [file, ...args] = command as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: 'inherit', env });
    const forward = (signal: NodeJS.Signals) => {
      child.kill(signal);
    };
    for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
    const finish = (code: number) => {
      for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
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
        finish(70);
      }
    });
    child.once('exit', (code, signal) => {
      finish(signal !== null ? exitCodeForSignal(signal) : (code ?? 70));
    });
  });
}

export async function main(argv: string[]): Promise<void> {
  try {
    const options = parseArgs(argv);
    if (options.help) {
      process.stdout.write(HELP);
      return;
    }
    if (options.version) {
      process.stdout.write(packageVersion() + '\n');
      return;
    }
    if (options.json && !options.list) throw new UsageError('--json only applies to --list');
    if (options.list && options.command !== null) throw new UsageError('--list takes no command');
    if (!options.list && options.command === null) throw new UsageError('missing -- COMMAND (see --help)');
    if (options.command !== null && options.command.length === 0) throw new UsageError('missing command after --');

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
    process.exitCode = await runCommand(options.command as string[], env);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${BIN}: ${error.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`${BIN}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 70;
    }
  }
}
