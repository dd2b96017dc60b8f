import { readFileSync } from 'node:fs';
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

const BIN = 'prun-model-resolve';
const TIMEOUT_ENV_VAR = 'ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS';
const DEFAULT_TIMEOUT_SECONDS = 60;

const HELP = `Usage: ${BIN} TEMPLATE [--listing FILE|-] [--json]

Prints the newest listed model of TEMPLATE's family, tier first (the template's tier, or
high when it has none, then high, then untiered), then the highest version. The template
is printed unchanged when it does not parse or nothing listed belongs to its family.

The listing is the output of \`agy models\` (the first word of each non-blank line).
Without --listing, ${BIN} runs \`$${BIN_ENV_VAR} models\` (default ${DEFAULT_BIN}) with a
timeout of $${TIMEOUT_ENV_VAR} seconds (default ${DEFAULT_TIMEOUT_SECONDS}).

Options:
  --listing FILE   read the listing from FILE, or from stdin when FILE is -
  --json           print {"template", "resolved", "pool", "effort"}
  -h, --help       show this help
  --version        print the version

Exit codes:
  0    resolved (the slug, or the JSON document, is on stdout)
  2    usage error
  70   the listing could not be obtained (agy missing, failing or timing out; FILE unreadable)
`;

class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const usage = (message: string) => new CliError(message, 2);
const noListing = (message: string) => new CliError(message, 70);

const Options = z.object({
  template: z.string().refine((value) => value.trim() !== '', 'TEMPLATE must not be blank'),
  listing: z.string().min(1, '--listing needs a file name or -').nullable(),
  json: z.boolean(),
});
type Options = z.infer<typeof Options>;

type Parsed = { kind: 'help' } | { kind: 'version' } | { kind: 'resolve'; options: Options };

function parseArgs(argv: readonly string[]): Parsed {
  const positionals: string[] = [];
  let listing: string | null = null;
  let json = false;
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '--listing' || arg.startsWith('--listing=')) {
      const value = arg === '--listing' ? argv[(i += 1)] : arg.slice('--listing='.length);
      if (value === undefined) throw usage('--listing needs a file name or -');
      listing = value;
    } else if (arg === '--json') json = true;
    else if (arg === '-h' || arg === '--help') help = true;
    else if (arg === '--version') version = true;
    else if (arg.startsWith('-') && arg !== '-') throw usage(`unknown option: ${arg}`);
    else positionals.push(arg);
  }
  if (help) return { kind: 'help' };
  if (version) return { kind: 'version' };
  if (positionals.length === 0) throw usage('missing TEMPLATE (see --help)');
  if (positionals.length > 1) throw usage(`expected one TEMPLATE, got ${positionals.length}`);
  const parsed = Options.safeParse({ template: positionals[0], listing, json });
  if (!parsed.success) throw usage(parsed.error.issues[0]?.message ?? 'invalid arguments');
  return { kind: 'resolve', options: parsed.data };
}

function packageVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return z.object({ version: z.string() }).parse(raw).version;
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

export async function main(argv: string[]): Promise<void> {
  try {
    const parsed = parseArgs(argv);
    if (parsed.kind === 'help') {
      process.stdout.write(HELP);
      return;
    }
    if (parsed.kind === 'version') {
      process.stdout.write(packageVersion() + '\n');
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
  } catch (error) {
    if (error instanceof CliError) {
      process.stderr.write(`${BIN}: ${error.message}\n`);
      process.exitCode = error.exitCode;
    } else {
      process.stderr.write(`${BIN}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 70;
    }
  }
}
