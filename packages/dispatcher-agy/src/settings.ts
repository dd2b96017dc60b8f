/**
 * The dispatcher's settings (its environment variables) and the other facts a caller such as
 * `prun batch` must check before it spends anything: the unit-id rule and the dispatcher's
 * command line. Pure and cheap to import: no process, no file system.
 */
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { atomicTempPath } from '@prun/kit/fs';
import { CliError } from '@prun/kit/cli';
import { pyStrip } from '@prun/kit/py';
import { isValidUnitId } from '@prun/unit-state';
import type { Mode } from './args.js';
import type { IsolationSetting } from './isolation.js';
import { parseNonNegativeSeconds, parsePositiveSeconds } from './pyparse.js';

export const DEFAULT_TIMEOUT_SECONDS = 2700;
/** The worker's deadline setting (agy's `--print-timeout`; the dispatcher's own deadline adds the kill grace). */
export const TIMEOUT_SETTING = 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS';
export const DEFAULT_EFFORT = 'high';
/** prun's own deadline: the worker gets this much past its `--print-timeout`. */
export const DEFAULT_KILL_GRACE_SECONDS = 60;
/** After forwarding a signal, how long the worker group gets before SIGKILL. */
export const DEFAULT_SIGNAL_GRACE_SECONDS = 5;
export const PREFLIGHT_DEFAULT_TIMEOUT_SECONDS = 60;

/**
 * The largest prompt file the dispatcher reads (it goes to the worker as one stdin line); a
 * caller that checks prompts up front uses the same bound.
 */
export const MAX_PROMPT_BYTES = 16 * 1024 * 1024;
/** The largest `conversation-id` file `--continue-from` reads (an id is a few dozen bytes). */
export const MAX_CONVERSATION_ID_BYTES = 64 * 1024;

/** Every message starts with the original's name: coordinators grep these texts. */
export const MESSAGE_PREFIX = 'dispatch-task-agy: ';

/**
 * A refusal with the dispatcher's own message (without MESSAGE_PREFIX) and exit code: kit's one
 * error type, under the name callers of this package already catch.
 */
export class UsageError extends CliError {
  constructor(message: string, exitCode: number = 2) {
    super(message, { exitCode });
    this.name = 'UsageError';
  }
}

export interface LaunchSettings {
  /** The model before routing: the named model or the default template. */
  model: string;
  /** `ANTIGRAVITY_DISPATCH_MODEL` stripped, or '' when unset. */
  namedModel: string;
  /** The effort setting as validated; the one sent follows the final model. */
  effort: string;
  timeoutSeconds: number;
  sandbox: boolean;
  killGraceSeconds: number;
  signalGraceSeconds: number;
  /** `PRUN_ISOLATE`: auto (unset), off, or pid (isolation required). */
  isolate: IsolationSetting;
}

const SANDBOX_ON = new Set(['1', 'true', 'yes', 'on']);
const SANDBOX_OFF = new Set(['', '0', 'false', 'no', 'off']);

/** The sandbox opt-in value; throws UsageError on anything else. */
export function parseSandbox(raw: string | undefined): boolean {
  const value = pyStrip(raw ?? '').toLowerCase();
  if (SANDBOX_ON.has(value)) return true;
  if (SANDBOX_OFF.has(value)) return false;
  throw new UsageError(`PRUN_AGY_SANDBOX must be 1/true/yes/on or 0/false/no/off (got: ${value})`);
}

/** `PRUN_ISOLATE`: unset, empty or `auto` isolates where the platform allows; `off`; `pid` requires it. */
export function parseIsolateSetting(raw: string | undefined): IsolationSetting {
  const value = pyStrip(raw ?? '').toLowerCase();
  if (value === '' || value === 'auto') return 'auto';
  if (value === 'off' || value === 'pid') return value;
  throw new UsageError(`PRUN_ISOLATE must be off, pid or auto (got: ${value})`);
}

function graceSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || pyStrip(raw) === '') return fallback;
  const value = parseNonNegativeSeconds(raw);
  if (value === null) throw new UsageError(`${name} must be a non-negative number of seconds`);
  return value;
}

/**
 * The settings checked before STATE-DIR, in the dispatcher's order (model and effort, timeout,
 * sandbox, then prun's own graces). Throws UsageError with the dispatcher's message.
 */
export function parseLaunchSettings(env: NodeJS.ProcessEnv, defaultModel: string): LaunchSettings {
  const model = pyStrip(env.ANTIGRAVITY_DISPATCH_MODEL ?? defaultModel);
  const namedModel = pyStrip(env.ANTIGRAVITY_DISPATCH_MODEL ?? '');
  const effort = pyStrip(env.ANTIGRAVITY_DISPATCH_EFFORT ?? DEFAULT_EFFORT);
  if (model === '' || effort === '') throw new UsageError('model and effort overrides must be non-empty');
  const timeoutSeconds = parsePositiveSeconds(env[TIMEOUT_SETTING] ?? String(DEFAULT_TIMEOUT_SECONDS));
  if (timeoutSeconds === null) throw new UsageError(`${TIMEOUT_SETTING} must be a positive integer`);
  const sandbox = parseSandbox(env.PRUN_AGY_SANDBOX);
  const killGraceSeconds = graceSetting(env, 'PRUN_AGY_KILL_GRACE_SECONDS', DEFAULT_KILL_GRACE_SECONDS);
  const signalGraceSeconds = graceSetting(env, 'PRUN_AGY_SIGNAL_GRACE_SECONDS', DEFAULT_SIGNAL_GRACE_SECONDS);
  const isolate = parseIsolateSetting(env.PRUN_ISOLATE);
  return { model, namedModel, effort, timeoutSeconds, sandbox, killGraceSeconds, signalGraceSeconds, isolate };
}

export interface PreflightSettings {
  /** `off` skips `--version` and `models`; `auto` and `force` behave the same. */
  mode: 'auto' | 'force' | 'off';
  /** Per command; null when preflight is off (the variable is then not read). */
  timeoutSeconds: number | null;
}

/**
 * The preflight settings. The dispatcher reads them after STATE-DIR (the original's order, so a
 * bad value there also gets a FALLBACK); a caller may check them up front with the same text.
 */
export function parsePreflightSettings(env: NodeJS.ProcessEnv): PreflightSettings {
  const mode = pyStrip(env.ANTIGRAVITY_PREFLIGHT ?? 'auto').toLowerCase();
  if (mode !== 'auto' && mode !== 'force' && mode !== 'off') {
    throw new UsageError(`ANTIGRAVITY_PREFLIGHT must be auto, force, or off (got: ${mode})`);
  }
  if (mode === 'off') return { mode, timeoutSeconds: null };
  const timeoutSeconds = parsePositiveSeconds(env.ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS ?? String(PREFLIGHT_DEFAULT_TIMEOUT_SECONDS));
  if (timeoutSeconds === null) throw new UsageError('ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS must be a positive integer');
  return { mode, timeoutSeconds };
}

/** The dispatcher's message when no agy binary is found (exit 70, before STATE-DIR). */
export const NO_BINARY_MESSAGE = 'no runnable Antigravity CLI found; install agy or set ANTIGRAVITY_BIN';
export const NO_BINARY_EXIT = 70;

export interface SettingsCheckOptions {
  /**
   * The binary lookup, as the dispatcher does it (model-resolve's `locateAgy`, with the cwd
   * the dispatcher will run in); left out, `ANTIGRAVITY_BIN` is not checked and the check
   * touches nothing outside `env`.
   */
  locateBinary?: () => string | null;
}

/**
 * For a caller that starts dispatchers (`prun batch`): throws the UsageError the dispatcher
 * would end with for `env` (its own message without MESSAGE_PREFIX, and its exit code: 70 for
 * a missing binary, 2 for every setting), in the dispatcher's order. Covers every setting it
 * reads, also the preflight ones it only checks after STATE-DIR.
 */
export function checkDispatcherSettings(env: NodeJS.ProcessEnv, options: SettingsCheckOptions = {}): void {
  if (options.locateBinary !== undefined && options.locateBinary() === null) {
    throw new UsageError(NO_BINARY_MESSAGE, NO_BINARY_EXIT);
  }
  // The default model only matters for the non-empty check, which it always passes.
  parseLaunchSettings(env, 'default');
  parsePreflightSettings(env);
}

/** The dispatcher's own unit-id message (pattern `[A-Za-z0-9_-]+`). */
export const UNIT_ID_MESSAGE = '--unit-id must contain only letters, digits, dashes, or underscores';
/**
 * The longest id whose state-directory name fits a 255-byte file name:
 * `prun-task-` (10) + hash (8) + `-` + id + `-` + pid (at most 7 digits) + `-` + nonce (16).
 */
export const MAX_UNIT_ID_LENGTH = 255 - (10 + 8 + 1 + 1 + 7 + 1 + 16);
export const UNIT_ID_DASH_MESSAGE = '--unit-id must not start with a dash: the command line `--unit-id ID` would read it as an option';
export const UNIT_ID_LENGTH_MESSAGE = `--unit-id must be at most ${MAX_UNIT_ID_LENGTH} characters: it is part of the state directory's name`;

/**
 * Why a unit id cannot be dispatched, or null. The dispatcher's pattern; no leading `-`
 * (written as the documented command line types it, `--unit-id -x`, argparse rules read it as
 * an option, so such a unit could not be re-run by hand); and a length whose state-directory
 * name fits a file name (a longer one fails when the dispatcher creates it).
 */
export function unitIdProblem(id: string): string | null {
  if (!isValidUnitId(id)) return UNIT_ID_MESSAGE;
  if (id.startsWith('-')) return UNIT_ID_DASH_MESSAGE;
  if (id.length > MAX_UNIT_ID_LENGTH) return UNIT_ID_LENGTH_MESSAGE;
  return null;
}

/** Temp files of the dispatcher's atomic publication carry this tag. */
export const PUBLISH_TAG = 'dispatch-task-agy';
/** The longest file name Linux file systems take (NAME_MAX), in bytes. */
const NAME_MAX_BYTES = 255;
/** The most digits a pid has (pid_max is at most 4194304). */
const MAX_PID_DIGITS = 7;

/**
 * Why the dispatcher could not publish to `resultPath`, or null: the result is written through
 * a temp file beside it (`.<name>.dispatch-task-agy-<pid>-<16 hex>.tmp`, @prun/kit/fs), whose
 * name must fit NAME_MAX even for a 7-digit pid. Checked before STATE-DIR, so a name too long
 * is refused before a worker is paid, not found when the result is published.
 */
export function resultPathProblem(resultPath: string): string | null {
  const temp = basename(atomicTempPath(resultPath, { tag: PUBLISH_TAG, nonce: '0'.repeat(16) }));
  const bytes = Buffer.byteLength(temp) - String(process.pid).length + MAX_PID_DIGITS;
  if (bytes <= NAME_MAX_BYTES) return null;
  const over = bytes - NAME_MAX_BYTES;
  return `result file name is ${over} byte(s) too long to publish (its temp name would be ${bytes} bytes, over ${NAME_MAX_BYTES}): ${resultPath}`;
}

/** The program and script that run the dispatcher: `[node, <package>/bin/prun-dispatch-agy.js]`. */
export function dispatcherCommand(): [string, string] {
  return [process.execPath, fileURLToPath(new URL('../bin/prun-dispatch-agy.js', import.meta.url))];
}

export interface DispatcherArgvInput {
  promptFile: string;
  resultFile: string;
  unitId: string;
  mode?: Mode | null;
  addDirs?: readonly string[];
  continueFrom?: string | null;
}

/**
 * The dispatcher's options (without the program) for one unit. Each value is joined to its
 * option with `=`, so a value starting with `-` is never taken for an option.
 */
export function dispatcherArgv(input: DispatcherArgvInput): string[] {
  const argv = [`--prompt-file=${input.promptFile}`, `--result-file=${input.resultFile}`, `--unit-id=${input.unitId}`];
  if (input.mode) argv.push(`--mode=${input.mode}`);
  for (const dir of input.addDirs ?? []) argv.push(`--add-dir=${dir}`);
  if (input.continueFrom) argv.push(`--continue-from=${input.continueFrom}`);
  return argv;
}
