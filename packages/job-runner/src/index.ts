// Library API of @prun/job-runner: the pure decisions and the state-layout helpers, so other
// tools can read jobs that prun-job or multi_agent.py started.
export { CommandError, EXIT_FAIL, EXIT_INTERNAL, EXIT_OK, EXIT_STILL_RUNNING, EXIT_USAGE, NOT_RUNNING } from './errors.js';
export { parseArgs, parseSeconds, runTimeout, NAME_RE, type ParsedArgs } from './args.js';
export {
  jobFile,
  jobsDir,
  logicalCwd,
  piAgentDir,
  projectSlug,
  sessionsDir,
  socketPath,
  stateRoot,
  findSessionFiles,
} from './paths.js';
export {
  appendPrompt,
  DEFAULT_PROFILE,
  loadProfiles,
  mergeProfiles,
  parseFrontmatter,
  parseScalar,
  pickProfile,
  profileArgs,
  splitItems,
  toolValue,
  type Profile,
  type ProfileFile,
} from './profiles.js';
export {
  deriveStatus,
  formatResultBlock,
  jobState,
  jobStates,
  readJobRecord,
  toJobRecord,
  RESULT_DELIMITER,
  STATUSES,
  type JobRecord,
  type JobStatus,
  type ResultFields,
} from './state.js';
export { RunTracker, settledStatus, shortArgs, type RpcEffects } from './rpc.js';
export { pyDumps, type ControlRequest, type ControlReply } from './control/protocol.js';
export { childEnv, piArgv } from './runner.js';
export { LineSplitter, MAX_RECORD_BYTES, type SkippedLine } from './lines.js';
export {
  checkDepth,
  defaultName,
  findJob,
  jobNames,
  listJobs,
  listRows,
  projectJobs,
  validateName,
  type ListOptions,
  type ListRow,
} from './jobs.js';
export { formatListTable, formatStatus, renderResult, statusDocument, type ResultDocument, type StatusDocument } from './render.js';
export { runnerPattern } from './commands/kill.js';
export { formatAge, formatG, parseUtc, shellQuote, utcNow } from './text.js';
export { parseTimeScale, timingsFor, type Timings } from './timing.js';
