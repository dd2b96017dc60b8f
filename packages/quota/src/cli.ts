import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, commandMain, packageVersion } from '@prun/kit/cli';
import { parseArgv as parseBySpec, renderHelp, usageMistake } from '@prun/kit/spec';
import { z } from 'zod';
import { type Env } from './location.js';
import { routeForDispatch } from './load.js';
import { DEFAULT_MODEL, pyStrip } from './models.js';
import { buildReadout, formatReadout } from './readout.js';
import { findAgyForRefresh, refresh, type RefreshResult } from './refresh.js';
import { QUOTA_EXHAUSTED_EXIT } from './route.js';
import { SPEC } from './spec.js';

const BIN = SPEC.name;

const EXIT = { ok: EXIT_OK, refreshFailed: 1, usage: EXIT_USAGE, internal: EXIT_INTERNAL, blocked: QUOTA_EXHAUSTED_EXIT } as const;

const OptionsSchema = z.discriminatedUnion('command', [
  z.object({ command: z.literal('readout'), json: z.boolean(), backgroundRefresh: z.boolean() }),
  z.object({ command: z.literal('refresh'), json: z.boolean(), force: z.boolean() }),
  z.object({ command: z.literal('route'), json: z.boolean(), model: z.string().optional() }),
  z.object({ command: z.literal('help'), path: z.array(z.string()) }),
  z.object({ command: z.literal('version') }),
]);
type Options = z.infer<typeof OptionsSchema>;

export function parseArgv(argv: readonly string[]): Options {
  // A mistake is kit's ArgvError (exit 2), worded and pointing at the command's help as in every bin.
  const parsed = parseBySpec(SPEC, argv);
  if (parsed.kind === 'help') return { command: 'help', path: parsed.path };
  if (parsed.kind === 'version') return { command: 'version' };
  const { options } = parsed;
  const command = parsed.path[0] ?? 'readout';
  const json = options['json'] === true;
  if (command === 'refresh') return OptionsSchema.parse({ command, json, force: options['force'] === true });
  if (command === 'route') {
    const given = options['model'] as string | undefined;
    const model = given === undefined ? undefined : pyStrip(given);
    if (model === '') throw usageMistake(SPEC, '--model needs a non-blank model name', ['route']);
    return OptionsSchema.parse({ command, json, ...(model === undefined ? {} : { model }) });
  }
  return OptionsSchema.parse({ command: 'readout', json, backgroundRefresh: options['no-refresh'] !== true });
}

function say(message: string): void {
  process.stderr.write(`${BIN}: ${message}\n`);
}

function out(text: string): void {
  process.stdout.write(`${text}\n`);
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

/** `refresh --json`: the RefreshResult in snake_case, like every other JSON output. */
export function refreshJson(result: RefreshResult): Record<string, unknown> {
  const { exitCode, ...rest } = result;
  return { outcome: rest.outcome, reason: rest.reason, queried: rest.queried, exit_code: exitCode, path: rest.path, ...(rest.detail === undefined ? {} : { detail: rest.detail }) };
}

async function runCommand(options: Options, env: Env): Promise<number> {
  switch (options.command) {
    case 'help':
      process.stdout.write(renderHelp(SPEC, options.path));
      return EXIT.ok;
    case 'version':
      out(packageVersion(new URL('../package.json', import.meta.url)));
      return EXIT.ok;
    case 'refresh': {
      const result = await refresh({ force: options.force, env });
      if (options.json) out(JSON.stringify(refreshJson(result)));
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

// runBin and commandMain own the top-level catch and the EPIPE policy (@prun/kit/cli).
export const main = commandMain(BIN, (argv: string[]) => runCommand(parseArgv(argv), process.env));
