export { EXIT, type ExitCode, SnapshotError, osErrorText } from './errors.js';
// The Python exception class name of an OS error: kit's, under the name this library exported.
export { pyExceptionName as pythonErrorClass } from '@prun/kit/py';
export {
  BIN,
  USAGE,
  UsageError,
  parseArgs,
  parseEnv,
  type ParsedArgs,
  type SnapshotEnv,
  type SnapshotOptions,
} from './options.js';
export {
  type DestinationPlan,
  type DestinationLever,
  archiveName,
  broadModeProblem,
  defaultDestDir,
  ensureDestDir,
  planDestination,
} from './destination.js';
export {
  READ_CHUNK_BYTES,
  type CopyResult,
  type OpenTail,
  type SourceIo,
  copyBounded,
  defaultSourceIo,
  openTail,
} from './source.js';
export {
  MANIFEST_MEMBER,
  MANIFEST_NOTE,
  TAIL_MEMBER,
  type Manifest,
  type ReadBack,
  type ReadBackRegion,
  TrailingReader,
  buildManifest,
  isoSeconds,
  jsonEqual,
  manifestBytes,
  pythonListRepr,
  validateArchive,
  writeArchive,
  writeFully,
} from './archive.js';
export { type ChunkDigest, type ChunkHasher, type ChunkHasherOptions, SLOT_BYTES, THREAD_THRESHOLD_BYTES, createChunkHasher } from './hasher.js';
export {
  type SnapshotOutcome,
  type SnapshotRequest,
  type SnapshotSeams,
  defaultSeams,
  publishByLink,
  removeLiveTemporaryFiles,
  removeStaleParts,
  resolveUnitDir,
  snapshotTail,
} from './snapshot.js';
export { groupThousands, renderJson, renderText } from './render.js';
