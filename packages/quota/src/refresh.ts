import { mkdir, open, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { underParentDeath, which as whichOnPath } from '@prun/kit/fs';
import { pyInt } from '@prun/kit/py';
import { z } from 'zod';
import { fileAgeSeconds, writeFileAtomic } from './files.js';
import { parseJsonLenient, pythonFloat, pythonJsonDumps } from './json.js';
import { attemptMarkerPath, homeDir, refreshLockPath, snapshotLocation, type Env } from './location.js';
import { clockMs, type Clock } from './clock.js';
import { expandUser, expandVars } from './models.js';
import { UsageDataSchema } from './states.js';

export const REFRESH_TTL_SECONDS = 300;
export const REFRESH_QUERY_TIMEOUT_SECONDS = 30;
/** A lock older than the query timeout plus this grace is taken to be left by a dead refresher. */
export const STALE_LOCK_GRACE_SECONDS = 30;
/** The query's own `--print-timeout` plus this is the subprocess deadline. */
export const QUERY_DEADLINE_GRACE_SECONDS = 5;

export type RefreshReason =
  | 'fresh'
  | 'recent-attempt'
  | 'locked'
  | 'lock-error'
  | 'written'
  | 'no-binary'
  | 'launch-error'
  | 'timeout'
  | 'nonzero-exit'
  | 'bad-json'
  | 'bad-payload'
  | 'write-error'
  | 'internal-error';

export interface RefreshResult {
  /** `skipped` and `written` exit 0, `failed` exits 1. */
  readonly outcome: 'skipped' | 'written' | 'failed';
  readonly reason: RefreshReason;
  /** Whether agy was run. */
  readonly queried: boolean;
  readonly exitCode: 0 | 1;
  readonly path: string;
  /** A human detail for failures (exit code, parse error, ...). */
  readonly detail?: string;
}

export interface UsageQuery {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly timeoutMs: number;
  readonly env: Env;
}

export interface UsageQueryResult {
  readonly stdout: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Set when the process could not be started or died by a signal. */
  readonly launchError?: string;
}

export type UsageRunner = (query: UsageQuery) => Promise<UsageQueryResult>;

export interface RefreshOptions {
  readonly force?: boolean;
  readonly env?: Env;
  readonly now?: Clock;
  /** Replaces the agy subprocess (tests). */
  readonly runner?: UsageRunner;
  /** Directory a relative `ANTIGRAVITY_BIN` is resolved against; defaults to process.cwd(). */
  readonly cwd?: string;
  /**
   * Start agy under the kernel's parent-death signal, so a host killed while the query runs (a
   * dispatcher, a batch's supervisor) leaves no agy behind. `true`: `setpriv --pdeathsig KILL`
   * (kit's `underParentDeath`), only for a caller that knows setpriv works here. A function: the
   * caller's own wrapping, given the query's command line and returning the one to run (the
   * dispatcher passes its launch plan's, which also covers machines without such a setpriv).
   */
  readonly parentDeath?: boolean | ParentDeathWrap;
}

/** A command line turned into one that runs it bound to its host's life (`RefreshOptions.parentDeath`). */
export type ParentDeathWrap = (command: readonly string[]) => string[];

/** The query's command line as `parentDeath` asks for it. */
function boundToHost(usage: readonly string[], parentDeath: RefreshOptions['parentDeath']): string[] {
  if (typeof parentDeath === 'function') return parentDeath(usage);
  return parentDeath === true ? underParentDeath(usage) : [...usage];
}

/** Python's `int()` of a setting (kit's pyInt); anything invalid or not positive gives the fallback. */
function positiveSetting(raw: string | undefined, fallback: number): number {
  const value = raw === undefined ? null : pyInt(raw);
  return value !== null && value > 0n ? Number(value) : fallback;
}

export function refreshSettings(env: Env): { ttlSeconds: number; timeoutSeconds: number } {
  return {
    ttlSeconds: positiveSetting(env['AGY_QUOTA_TTL_SECONDS'], REFRESH_TTL_SECONDS),
    timeoutSeconds: positiveSetting(env['AGY_QUOTA_TIMEOUT_SECONDS'], REFRESH_QUERY_TIMEOUT_SECONDS),
  };
}

async function isFile(candidate: string): Promise<boolean> {
  try {
    return (await stat(candidate)).isFile();
  } catch {
    return false;
  }
}

/**
 * `shutil.which` (@prun/kit/fs), answering absolute paths: a name with a separator is checked as
 * it is; a bare name is searched on PATH (unset → the default search path, an empty entry → cwd).
 * Absolute, because agy is then started with the home directory as its cwd.
 */
export async function which(command: string, env: Env, cwd: string = process.cwd()): Promise<string | null> {
  return whichOnPath(command, { env, cwd });
}

/**
 * agent-quota's lookup (README: How it works, Finding agy), which differs from the dispatcher's: `ANTIGRAVITY_BIN` (empty →
 * `agy`), expanded; an existing file relative to cwd wins even for a bare name (absolute path,
 * not realpath'd); else PATH; else the Windows per-user install.
 */
export async function findAgyForRefresh(env: Env, cwd: string = process.cwd()): Promise<string | null> {
  const configured = env['ANTIGRAVITY_BIN'] || 'agy';
  const expanded = expandVars(expandUser(configured, env), env);
  const direct = path.resolve(cwd, expanded);
  if (await isFile(direct)) return direct;
  const found = await which(configured, env, cwd);
  if (found !== null) return found;
  const localAppData = env['LOCALAPPDATA'];
  if (process.platform === 'win32' && localAppData && ['agy', 'agy.exe'].includes(configured.toLowerCase())) {
    const candidate = path.join(localAppData, 'agy', 'bin', 'agy.exe');
    if (await isFile(candidate)) return candidate;
  }
  return null;
}

export const runUsageQuery: UsageRunner = async (query) => {
  // Loaded on first use: most calls (route, readout, a skipped refresh) never start agy.
  const { execa } = await import('execa');
  const result = await execa(query.file, [...query.args], {
    cwd: query.cwd,
    env: { ...query.env },
    extendEnv: false,
    timeout: query.timeoutMs,
    forceKillAfterDelay: 2000,
    reject: false,
    stdin: 'ignore',
    stripFinalNewline: false,
    windowsHide: true,
  });
  const stdout = typeof result.stdout === 'string' ? result.stdout : '';
  if (result.timedOut) return { stdout, exitCode: null, timedOut: true };
  if (result.exitCode === undefined) {
    return { stdout, exitCode: null, timedOut: false, launchError: result.shortMessage ?? "agy did not exit normally" };
  }
  return { stdout, exitCode: result.exitCode, timedOut: false };
};

/** The `/usage` answer agy prints; `usage` at its top level is token usage and is discarded. */
export const UsagePayloadSchema = z.looseObject({
  status: z.literal('SUCCESS'),
  command: z.looseObject({
    name: z.enum(['usage', 'quota']),
    data: UsageDataSchema.refine(
      (data) => data.groups.some((group) => typeof group === 'object' && group !== null && (group as { name?: unknown }).name === 'Gemini Models'),
      { message: 'no group named "Gemini Models"' },
    ),
  }),
  plan_tier: z.unknown().optional(),
});

/** The snapshot text: `{"cached_at": <float>, "usage": <command.data>[, "plan_tier": ...]}`. */
export function snapshotText(cachedAtSeconds: number, usage: unknown, planTier: unknown): string {
  const tier = planTier ? `, "plan_tier": ${pythonJsonDumps(planTier)}` : '';
  return `{"cached_at": ${pythonFloat(cachedAtSeconds)}, "usage": ${pythonJsonDumps(usage)}${tier}}`;
}

type LockOutcome = { held: true } | { held: false; reason: 'locked' | 'lock-error' };

async function createExclusive(lockPath: string): Promise<void> {
  const handle = await open(lockPath, 'wx');
  await handle.close();
}

async function takeLock(lockPath: string, staleAfterSeconds: number, nowMs: number): Promise<LockOutcome> {
  try {
    await createExclusive(lockPath);
    return { held: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return { held: false, reason: 'lock-error' };
  }
  const age = await fileAgeSeconds(lockPath, nowMs);
  if (age === null || age < staleAfterSeconds) return { held: false, reason: 'locked' };
  try {
    await unlink(lockPath);
    await createExclusive(lockPath);
    return { held: true };
  } catch {
    return { held: false, reason: 'locked' };
  }
}

/**
 * The refresh (README: How it works, Refresh): TTL and attempt-marker throttle (skipped when forced), an exclusive lock with
 * a stale-lock rule, one `agy -p /usage` query from the home directory, payload validation and
 * an atomic snapshot write. Never throws.
 */
export async function refresh(options: RefreshOptions = {}): Promise<RefreshResult> {
  const env = options.env ?? process.env;
  const cachePath = snapshotLocation(env).path;
  const done = (outcome: RefreshResult['outcome'], reason: RefreshReason, queried: boolean, detail?: string): RefreshResult => ({
    outcome,
    reason,
    queried,
    exitCode: outcome === 'failed' ? 1 : 0,
    path: cachePath,
    ...(detail === undefined ? {} : { detail }),
  });
  try {
    const { ttlSeconds, timeoutSeconds } = refreshSettings(env);
    const markerPath = attemptMarkerPath(cachePath);
    if (options.force !== true) {
      const cacheAge = await fileAgeSeconds(cachePath, clockMs(options.now));
      if (cacheAge !== null && cacheAge < ttlSeconds) return done('skipped', 'fresh', false);
      const markerAge = await fileAgeSeconds(markerPath, clockMs(options.now));
      if (markerAge !== null && markerAge < ttlSeconds) return done('skipped', 'recent-attempt', false);
    }
    try {
      await mkdir(path.dirname(cachePath), { recursive: true });
    } catch {
      return done('skipped', 'lock-error', false);
    }
    const lockPath = refreshLockPath(cachePath);
    const lock = await takeLock(lockPath, timeoutSeconds + STALE_LOCK_GRACE_SECONDS, clockMs(options.now));
    if (!lock.held) return done('skipped', lock.reason, false);
    try {
      // The marker throttles the next non-forced refresh even when this one fails.
      await writeFileAtomic(markerPath, `{"ts": ${pythonFloat(clockMs(options.now) / 1000)}}`).catch(() => undefined);
      const executable = await findAgyForRefresh(env, options.cwd);
      if (executable === null) return done('failed', 'no-binary', false, 'agy not found; install the Antigravity CLI or set ANTIGRAVITY_BIN');
      const runner = options.runner ?? runUsageQuery;
      const usage = [executable, '-p', '/usage', '--output-format', 'json', '--print-timeout', `${timeoutSeconds}s`];
      const command = boundToHost(usage, options.parentDeath);
      const query = await runner({
        file: command[0]!,
        args: command.slice(1),
        cwd: homeDir(env),
        timeoutMs: (timeoutSeconds + QUERY_DEADLINE_GRACE_SECONDS) * 1000,
        env,
      }).catch((error: unknown) => ({
        stdout: '',
        exitCode: null,
        timedOut: false,
        launchError: error instanceof Error ? error.message : String(error),
      }));
      if (query.timedOut) return done('failed', 'timeout', true, `agy /usage timed out after ${timeoutSeconds + QUERY_DEADLINE_GRACE_SECONDS}s`);
      if (query.launchError !== undefined || query.exitCode === null) {
        return done('failed', 'launch-error', true, query.launchError ?? 'agy did not exit normally');
      }
      if (query.exitCode !== 0) return done('failed', 'nonzero-exit', true, `agy /usage exited with code ${query.exitCode}`);
      let payload: unknown;
      try {
        payload = parseJsonLenient(query.stdout);
      } catch {
        return done('failed', 'bad-json', true, 'agy /usage printed no JSON document');
      }
      const checked = UsagePayloadSchema.safeParse(payload);
      if (!checked.success) return done('failed', 'bad-payload', true, 'agy /usage answer is not a successful quota report with a "Gemini Models" group');
      try {
        // The raw object, not zod's copy: `usage` is a verbatim copy of `command.data`, key order included.
        const raw = payload as { command: { data: unknown }; plan_tier?: unknown };
        const text = snapshotText(clockMs(options.now) / 1000, raw.command.data, raw.plan_tier);
        await writeFileAtomic(cachePath, text);
      } catch (error) {
        return done('failed', 'write-error', true, error instanceof Error ? error.message : String(error));
      }
      return done('written', 'written', true);
    } finally {
      await unlink(lockPath).catch(() => undefined);
    }
  } catch (error) {
    return done('failed', 'internal-error', false, error instanceof Error ? error.message : String(error));
  }
}
