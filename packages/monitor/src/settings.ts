import { CliError, usageError } from '@prun/kit/cli';

/**
 * A bad command line or environment value (one message line, exit 2) is @prun/kit's CliError;
 * `UsageError` stays exported under its old name for the packages that catch it.
 */
export { CliError as UsageError };

// Unset or empty means the default (as the shell originals did); anything else must be plain
// digits that make a safe integer. A plain check, not a schema: loading zod cost the monitor's
// start more than its whole single pass does.
const WHOLE_SECONDS = /^[0-9]+$/;

/** Read one whole-seconds setting; a value that is not a non-negative integer names the variable. */
export function readSecondsSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const seconds = Number(raw);
  if (!WHOLE_SECONDS.test(raw) || !Number.isSafeInteger(seconds)) {
    throw usageError(`${name} must be a non-negative integer number of seconds, got ${JSON.stringify(raw)}`);
  }
  return seconds;
}

export interface MonitorSettings {
  stallThresholdS: number;
  pollS: number;
  timeoutS: number;
  stableWindowS: number;
}

export const MONITOR_ENV = {
  stallThresholdS: ['PRUN_STALL_THRESHOLD', 600],
  pollS: ['PRUN_MONITOR_POLL', 15],
  timeoutS: ['PRUN_MONITOR_TIMEOUT', 3600],
  stableWindowS: ['PRUN_MONITOR_STABLE_WINDOW', 10],
} as const;

export interface GatherSettings {
  timeoutS: number;
  pollS: number;
  stableWindowS: number;
}

export const GATHER_ENV = {
  timeoutS: ['AGENT_CONFIG_GATHER_TIMEOUT', 3600],
  pollS: ['PRUN_GATHER_POLL', 5],
  stableWindowS: ['PRUN_GATHER_STABLE_WINDOW', 10],
} as const;

/** Read every setting of a table like MONITOR_ENV from the environment. */
export function readSettings<K extends string>(
  env: NodeJS.ProcessEnv,
  table: Record<K, readonly [string, number]>,
): Record<K, number> {
  const result = {} as Record<K, number>;
  for (const key of Object.keys(table) as K[]) {
    const [name, fallback] = table[key];
    result[key] = readSecondsSetting(env, name, fallback);
  }
  return result;
}
