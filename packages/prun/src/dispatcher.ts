// Everything prun knows about starting a dispatcher lives here, so the dispatcher package's own
// exports (argv, settings and unit-id checks) are used in one place.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';

/** How prun starts one unit's dispatcher. */
export interface DispatchRequest {
  unitId: string;
  promptFile: string;
  resultFile: string;
  mode: string | null;
  addDirs: string[];
  continueFrom: string | null;
}

/** The dispatcher's bin, resolved from its package (never from PATH). */
export function dispatcherBin(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('@prun/dispatcher-agy/package.json');
  const manifest = require(manifestPath) as { bin: Record<string, string> };
  return resolve(dirname(manifestPath), manifest.bin['prun-dispatch-agy']!);
}

/** The dispatcher's options for one unit (after the bin path). */
export function dispatcherArgs(request: DispatchRequest): string[] {
  const args = ['--prompt-file', request.promptFile, '--result-file', request.resultFile, '--unit-id', request.unitId];
  if (request.mode) args.push('--mode', request.mode);
  for (const dir of request.addDirs) args.push('--add-dir', dir);
  if (request.continueFrom) args.push('--continue-from', request.continueFrom);
  return args;
}

/** One unit as the pre-flight check sees it. */
export interface PreflightUnit {
  request: DispatchRequest;
  /** The environment its dispatcher would get. */
  env: NodeJS.ProcessEnv;
  /** A readable UTF-8 regular file standing in for the prompt (the real one may not exist yet). */
  promptStandIn: string;
}

/**
 * Would the dispatcher accept this unit? Runs the dispatcher package's own argv parser and its
 * validation (unit id, mode rule, add-dirs, settings such as ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS,
 * the agy binary), reading files only. Returns the dispatcher's one-line refusal, or null.
 * Loaded lazily: the dispatcher's code is needed only when a batch is about to run.
 */
export async function dispatcherRefusal(unit: PreflightUnit, cwd: string): Promise<string | null> {
  const [dispatcher, models] = await Promise.all([import('@prun/dispatcher-agy'), import('@prun/model-resolve')]);
  const argv = dispatcherArgs({ ...unit.request, promptFile: unit.promptStandIn });
  const parsed = dispatcher.parseArgs(argv);
  if (parsed.kind === 'error') return parsed.message;
  if (parsed.kind !== 'args') return `the dispatcher does not take these options: ${argv.join(' ')}`;
  try {
    dispatcher.validate(parsed.args, { env: unit.env, cwd, defaultModel: models.DEFAULT_MODEL, locateBinary: models.locateAgy });
  } catch (error) {
    if (error instanceof dispatcher.UsageError) return error.message;
    throw error;
  }
  return null;
}
