import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { type Env } from './location.js';
import { routeForDispatch } from './load.js';
import { DEFAULT_MODEL, pyStrip } from './models.js';
import { buildReadout, formatReadout } from './readout.js';
import { findAgyForRefresh, refresh, type RefreshResult } from './refresh.js';
import { QUOTA_EXHAUSTED_EXIT } from './route.js';

const BIN = 'prun-quota';

const EXIT = { ok: 0, refreshFailed: 1, usage: 2, internal: 70, blocked: QUOTA_EXHAUSTED_EXIT } as const;

const HELP = `Usage:
  ${BIN} [--json] [--no-refresh]       readout of both Agy quota groups
  ${BIN} refresh [--force] [--json]    query agy /usage and rewrite the snapshot
  ${BIN} route [--model M] [--json]    the model a unit would run on, or why it may not start

The snapshot is $AGY_QUOTA_CACHE, else ~/.claude/agy-quota-cache.json.
route: --model M (or a non-blank ANTIGRAVITY_DISPATCH_MODEL) names a pinned model;
without one the unit is unpinned and starts from ${DEFAULT_MODEL}. The model to run is the
only stdout line; a MODEL-BALANCE/MODEL-FALLBACK note goes to stderr.
The readout starts a background refresh when the snapshot is older than the TTL
(unless --no-refresh).

Environment: AGY_QUOTA_CACHE, AGY_QUOTA_TTL_SECONDS (300), AGY_QUOTA_TIMEOUT_SECONDS (30),
ANTIGRAVITY_BIN (agy), ANTIGRAVITY_DISPATCH_MODEL, PRUN_AGY_QUOTA_GATE (0/off/false/disabled/no = off).

Exit codes:
  0   success (readout printed, refresh written or skipped, route may run)
  1   refresh failed (no agy, agy failed or timed out, bad /usage answer, write failed)
  2   usage error
  70  internal error
  75  route: blocked, the quota group(s) the unit needs are exhausted
`;

class UsageError extends Error {}

const OptionsSchema = z.discriminatedUnion('command', [
  z.object({ command: z.literal('readout'), json: z.boolean(), backgroundRefresh: z.boolean() }),
  z.object({ command: z.literal('refresh'), json: z.boolean(), force: z.boolean() }),
  z.object({ command: z.literal('route'), json: z.boolean(), model: z.string().optional() }),
  z.object({ command: z.literal('help') }),
  z.object({ command: z.literal('version') }),
]);
type Options = z.infer<typeof OptionsSchema>;

const FLAGS: Record<'readout' | 'refresh' | 'route', readonly string[]> = {
  readout: ['--json', '--no-refresh'],
  refresh: ['--json', '--force'],
  route: ['--json', '--model'],
};

export function parseArgv(argv: readonly string[]): Options {
  if (argv.includes('--help') || argv.includes('-h')) return { command: 'help' };
  if (argv.includes('--version')) return { command: 'version' };
  let rest = [...argv];
  let command: 'readout' | 'refresh' | 'route' = 'readout';
  if (rest[0] === 'refresh' || rest[0] === 'route') {
    command = rest[0];
    rest = rest.slice(1);
  }
  const seen = new Set<string>();
  let model: string | undefined;
  for (let index = 0; index < rest.length; index += 1) {
    const arg = rest[index] as string;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (!flag.startsWith('-')) throw new UsageError(`unexpected argument '${arg}'`);
    if (!FLAGS[command].includes(flag)) throw new UsageError(`unknown option '${flag}'${command === 'readout' ? '' : ` for '${command}'`}`);
    if (seen.has(flag)) throw new UsageError(`option '${flag}' given twice`);
    seen.add(flag);
    if (flag === '--model') {
      const value = inline ?? rest[(index += 1)];
      if (value === undefined) throw new UsageError("option '--model' needs a model name");
      model = pyStrip(value);
      if (model === '') throw new UsageError("option '--model' needs a non-blank model name");
    } else if (inline !== undefined) {
      throw new UsageError(`option '${flag}' takes no value`);
    }
  }
  const json = seen.has('--json');
  if (command === 'readout') return OptionsSchema.parse({ command, json, backgroundRefresh: !seen.has('--no-refresh') });
  if (command === 'refresh') return OptionsSchema.parse({ command, json, force: seen.has('--force') });
  return OptionsSchema.parse({ command, json, ...(model === undefined ? {} : { model }) });
}

function say(message: string): void {
  process.stderr.write(`${BIN}: ${message}\n`);
}

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

function packageVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return z.object({ version: z.string() }).parse(raw).version;
}

/** Runs `prun-quota refresh` detached so the readout returns at once (agent-quota's background refresh). */
function startBackgroundRefresh(env: Env): boolean {
  try {
    const bin = fileURLToPath(new URL('../bin/prun-quota.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'refresh'], { detached: true, stdio: 'ignore', env: { ...env } });
    child.on('error', () => undefined);
    child.unref();
    return child.pid !== undefined;
  } catch {
    return false;
  }
}

const SKIP_TEXT: Record<string, string> = {
  fresh: 'the snapshot is younger than the TTL',
  'recent-attempt': 'a refresh was attempted within the TTL',
  locked: 'another refresh holds the lock',
  'lock-error': 'the lock file could not be created',
};

function reportRefresh(result: RefreshResult): void {
  if (result.outcome === 'written') say(`snapshot written to ${result.path}`);
  else if (result.outcome === 'skipped') say(`refresh skipped: ${SKIP_TEXT[result.reason] ?? result.reason}`);
  else say(`refresh failed: ${result.detail ?? result.reason}`);
}

async function runCommand(options: Options, env: Env): Promise<number> {
  switch (options.command) {
    case 'help':
      process.stdout.write(HELP);
      return EXIT.ok;
    case 'version':
      out(packageVersion());
      return EXIT.ok;
    case 'refresh': {
      const result = await refresh({ force: options.force, env });
      if (options.json) out(JSON.stringify(result));
      reportRefresh(result);
      return result.exitCode;
    }
    case 'route': {
      const named = options.model ?? pyStrip(env['ANTIGRAVITY_DISPATCH_MODEL'] ?? '');
      const pinned = named !== '';
      const decision = await routeForDispatch({ model: pinned ? named : DEFAULT_MODEL, pinned, env });
      if (options.json) {
        out(JSON.stringify({ model: decision.model, pinned, note: decision.note ?? null, block: decision.block ?? null }));
      } else if (decision.block === undefined) {
        out(decision.model);
      }
      if (decision.note !== undefined) say(decision.note);
      if (decision.block !== undefined) {
        say(decision.block);
        return EXIT.blocked;
      }
      return EXIT.ok;
    }
    case 'readout': {
      const installed = (await findAgyForRefresh(env)) !== null;
      const readout = await buildReadout({
        env,
        installed,
        ...(options.backgroundRefresh ? { startRefresh: () => startBackgroundRefresh(env) } : {}),
      });
      if (options.json) out(JSON.stringify(readout));
      else for (const line of formatReadout(readout)) out(line);
      return EXIT.ok;
    }
  }
}

export async function main(argv: string[]): Promise<void> {
  // A reader that stops early (`prun-quota route | head -c0`) is not an error worth a stack trace.
  process.stdout.on('error', () => undefined);
  try {
    process.exitCode = await runCommand(parseArgv(argv), process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      say(`${error.message} (see ${BIN} --help)`);
      process.exitCode = EXIT.usage;
      return;
    }
    say(`internal error: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = EXIT.internal;
  }
}
