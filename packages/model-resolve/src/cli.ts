import { readFileSync } from 'node:fs';
import { CliError, EXIT_INTERNAL, commandMain } from '@prun/kit/cli';
import { answerHelpOrVersion, parseArgv, usageMistake } from '@prun/kit/spec';
import { z } from 'zod';
import {
  BIN_ENV_VAR,
  DEFAULT_BIN,
  EFFORT_ENV_VAR,
  effortFor,
  pyStrip,
  locateAgy,
  modelPool,
  newestInFamily,
  parseListing,
} from './index.js';
import { DEFAULT_TIMEOUT_SECONDS, SPEC, TIMEOUT_ENV_VAR } from './spec.js';

const BIN = SPEC.name;

const usage = (message: string) => new CliError(message);
const noListing = (message: string) => new CliError(message, { exitCode: EXIT_INTERNAL });

const Options = z.object({
  template: z.string().refine((value) => value.trim() !== '', 'TEMPLATE must not be blank'),
  listing: z.string().min(1, '--listing needs a file name or -').nullable(),
  json: z.boolean(),
});
type Options = z.infer<typeof Options>;

type Parsed = { kind: 'help' } | { kind: 'version' } | { kind: 'resolve'; options: Options };

function parseArgs(argv: readonly string[]): Parsed {
  // An ArgvError is already a usage CliError (exit 2): it reaches commandMain as it is.
  const parsed = parseArgv(SPEC, argv);
  if (parsed.kind !== 'run') return parsed;
  const { positionals, options } = parsed;
  if (positionals.length === 0) throw usageMistake(SPEC, 'missing TEMPLATE');
  if (positionals.length > 1) throw usageMistake(SPEC, `expected one TEMPLATE, got ${positionals.length}`);
  const checked = Options.safeParse({
    template: positionals[0],
    listing: options['listing'] ?? null,
    json: options['json'] === true,
  });
  if (!checked.success) throw usageMistake(SPEC, checked.error.issues[0]?.message ?? 'invalid arguments');
  return { kind: 'resolve', options: checked.data };
}

function preflightTimeoutSeconds(env: NodeJS.ProcessEnv): number {
  const raw = env[TIMEOUT_ENV_VAR];
  if (raw === undefined) return DEFAULT_TIMEOUT_SECONDS;
  const parsed = z
    .string()
    .trim()
    .regex(/^\+?\d+$/)
    .transform(Number)
    .pipe(z.number().int().positive().max(2_147_483))
    .safeParse(raw);
  if (!parsed.success) throw usage(`${TIMEOUT_ENV_VAR} must be a positive integer`);
  return parsed.data;
}

function readListingFile(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw noListing(`cannot read listing ${file === '-' ? 'from stdin' : file}: ${reason}`);
  }
}

async function runModels(env: NodeJS.ProcessEnv): Promise<string> {
  const timeoutSeconds = preflightTimeoutSeconds(env);
  const exe = locateAgy(env, process.cwd());
  if (exe === null) {
    throw noListing(`Antigravity CLI not found (${BIN_ENV_VAR}=${env[BIN_ENV_VAR] ?? DEFAULT_BIN})`);
  }
  // Loaded only here: most runs read a listing and should not pay for execa's start-up.
  const { execa } = await import('execa');
  const result = await execa(exe, ['models'], {
    reject: false,
    stdin: 'ignore',
    timeout: timeoutSeconds * 1000,
    forceKillAfterDelay: 2000,
    stripFinalNewline: false,
  });
  if (result.timedOut) throw noListing(`'${exe} models' timed out after ${timeoutSeconds}s`);
  if (result.failed && result.exitCode === undefined) {
    throw noListing(`could not run '${exe} models': ${result.originalMessage ?? result.shortMessage}`);
  }
  if (result.exitCode !== 0) {
    const how = result.signal !== undefined ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
    throw noListing(`'${exe} models' ${how}; run 'agy' interactively and sign in`);
  }
  return String(result.stdout);
}

export const main = commandMain(BIN, async (argv: string[]): Promise<number | void> => {
  const parsed = parseArgs(argv);
  if (parsed.kind !== 'resolve') {
    answerHelpOrVersion(SPEC, parsed, new URL('../package.json', import.meta.url));
    return;
  }
  const { template, listing: listingSource, json } = parsed.options;
  const explicitEffort = process.env[EFFORT_ENV_VAR];
  if (json && explicitEffort !== undefined && pyStrip(explicitEffort) === '') {
    throw usage(`${EFFORT_ENV_VAR} must not be blank`);
  }
  const text = listingSource === null ? await runModels(process.env) : readListingFile(listingSource);
  const resolved = newestInFamily(template, parseListing(text));
  process.stdout.write(
    json
      ? JSON.stringify({ template, resolved, pool: modelPool(resolved), effort: effortFor(resolved, process.env) }) + '\n'
      : resolved + '\n',
  );
});
