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
  splitLines,
  failureReason,
  type WorkerEnd,
  type OutcomeInput,
  type Outcome,
  decideOutcome,
  lastLines,
  pySplitlines,
} from './decide.js';
export { parsePythonInt, parsePositiveSeconds, parseNonNegativeSeconds } from './pyparse.js';
export {
  DEFAULT_TIMEOUT_SECONDS,
  DEFAULT_EFFORT,
  DEFAULT_KILL_GRACE_SECONDS,
  DEFAULT_SIGNAL_GRACE_SECONDS,
  type DispatchConfig,
  type ValidateDeps,
  UsageError,
  validate,
  joinOntoCwd,
  resolveNonStrict,
  decodeUtf8,
  universalNewlines,
  parseSandbox,
} from './validate.js';
export { MESSAGE_PREFIX, type DispatchIo, dispatch } from './run.js';
