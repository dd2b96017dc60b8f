export {
  type ResultPathState,
  type ResultValue,
  type UnitStage,
  type UnitError,
  type StatFact,
  type ResultOutcome,
  type ResultTarget,
  LEGAL_RESULT_PAIRS,
  isLegalResultPair,
  resolveEntry,
  classifyTarget,
  failedClassification,
  tailBytesOf,
  legacyPidOf,
} from './classify.js';
export {
  type FsPath,
  type ObservedPath,
  decodeSurrogateEscape,
  isUtf8,
  childPath,
} from './names.js';
// Python's sorted() order of str and ensure_ascii: their home is @prun/kit/py, re-exported for
// this library's users.
export { compareCodePoints, toAsciiJson } from '@prun/kit/py';
export {
  type FileFacts,
  type ObservationFs,
  type Discovery,
  type Sweep,
  type SweepPlan,
  nodeObservationFs,
  errorName,
  discoverUnits,
  inspectUnit,
  observeUnit,
  planSweep,
  sweep,
} from './observe.js';
export {
  SCHEMA_VERSION,
  SAFETY_LINES,
  SAFETY_SENTENCE,
  type DiscoveryError,
  type UnitRecord,
  type UnitObservation,
  type Summary,
  type SortOrder,
  type DisplayOptions,
  type Report,
  buildRecord,
  buildSummary,
  SummaryCounter,
  selectShown,
  isPartial,
  buildReport,
} from './report.js';
export {
  type OutputChunk,
  jsonDocument,
  renderJson,
  renderText,
  type ReportHead,
  type WriteOutput,
  ReportWriter,
  groupThousands,
  formatMiB,
  formatCounts,
} from './render.js';
export { type ReportOptions, type ParsedArgs, parseArgs } from './options.js';
