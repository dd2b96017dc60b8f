// @prun/kit/spec: a bin's declaration (plain data) and what is generated from it.
export type * from './types.js';
export {
  ArgvError,
  commandAt,
  findCommand,
  findOption,
  parseArgv,
  unknownCommand,
  usageMistake,
  versionOffered,
  withHelpPointer,
  type ArgvErrorKind,
  type ArgvProblem,
  type OptionValue,
  type ParsedArgv,
} from './parse.js';
export { answerHelpOrVersion, optionLabel, plainText, renderHelp, usageLine } from './help.js';
export { completionScript, SHELLS, type Shell } from './completion.js';
export { exitCodeTable, replaceBetweenMarkers, markers } from './tables.js';
export { ARGPARSE_NEGATIVE_NUMBER, argparseSpecOf, multiAgentWording, parseLikeArgparse, type ArgparseOption, type ArgparseOutcome, type ArgparseSpec } from './argparse.js';
