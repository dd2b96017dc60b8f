export { MODES, type Mode, type ParsedArgs, type ArgsOutcome, parseArgs } from './args.js';
export {
  MIN_RESULT_BYTES,
  TAIL_ECHO_LINES,
  buildRelayPrompt,
  stdinPayload,
  buildWorkerArgv,
  type WorkerArgvInput,
  type StreamReading,
  readEventStream,
  AgyInitEventSchema,
  AgyResultEventSchema,
  splitLines,
  failureReason,
  type WorkerEnd,
  type OutcomeInput,
  type Outcome,
  decideOutcome,
  BUSY_EXIT,
  busyRefusalReason,
  busyRefusalDir,
  isBusyRefusal,
  lastLines,
  pySplitlines,
} from './decide.js';
export { parsePythonInt, parsePositiveSeconds, parseNonNegativeSeconds } from './pyparse.js';
export {
  DEFAULT_TIMEOUT_SECONDS,
  TIMEOUT_SETTING,
  DEFAULT_EFFORT,
  DEFAULT_KILL_GRACE_SECONDS,
  DEFAULT_SIGNAL_GRACE_SECONDS,
  PREFLIGHT_DEFAULT_TIMEOUT_SECONDS,
  MAX_PROMPT_BYTES,
  MAX_CONVERSATION_ID_BYTES,
  MESSAGE_PREFIX,
  NO_BINARY_MESSAGE,
  NO_BINARY_EXIT,
  UNIT_ID_MESSAGE,
  UNIT_ID_DASH_MESSAGE,
  UNIT_ID_LENGTH_MESSAGE,
  MAX_UNIT_ID_LENGTH,
  UsageError,
  type LaunchSettings,
  type PreflightSettings,
  type DispatcherArgvInput,
  parseLaunchSettings,
  parsePreflightSettings,
  type SettingsCheckOptions,
  checkDispatcherSettings,
  unitIdProblem,
  PUBLISH_TAG,
  resultPathProblem,
  dispatcherArgv,
  dispatcherCommand,
  parseSandbox,
} from './settings.js';
export {
  type DispatchConfig,
  type ValidateDeps,
  validate,
  joinOntoCwd,
  resolveNonStrict,
  decodeUtf8,
  universalNewlines,
} from './validate.js';
export { ChainReserve, sameChainKey, type ChainKey, type SpareChain } from './reserve.js';
import type { UnitOptions } from './run.js';
export type { UnitOptions };
export {
  UnitStopper,
  stopSourceFromAbortSignal,
  isUnitStopSignal,
  type UnitStopSignal,
  type StopRequest,
  type UnitStopSource,
} from './stop.js';

/**
 * Runs one unit in this process, as the bin would with `options.argv` in `options.cwd` and
 * `options.env`, and returns the exit code the bin would exit with (README, "Library: running
 * units in-process"). Re-entrant: no process-wide state, so one process can run many units at
 * once. The I/O half (quota, model resolution, the scrub, child processes) loads on first use,
 * so importing this entry for its pure checks stays cheap.
 */
export async function runUnit(options: UnitOptions): Promise<number> {
  const run = await import('./run.js');
  return run.runUnit(options);
}
