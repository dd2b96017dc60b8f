// Everything prun knows about starting a dispatcher comes from the dispatcher package's own
// exports (its command, argv, settings check and unit-id rule), used here in one place.
import { isDirectory } from '@prun/kit/fs';
import { checkDispatcherSettings, dispatcherArgv, parseArgs, resultPathProblem, UsageError, type Mode } from '@prun/dispatcher-agy';
import { locateAgy } from '@prun/model-resolve';

export { unitIdProblem as dispatcherUnitIdProblem } from '@prun/dispatcher-agy';

/** How prun starts one unit's dispatcher. */
export interface DispatchRequest {
  unitId: string;
  promptFile: string;
  resultFile: string;
  mode: Mode | null;
  addDirs: string[];
  continueFrom: string | null;
}

/** The dispatcher's options for one unit (without the program), as the supervisor runs it in-process. */
export function dispatcherOptions(request: DispatchRequest): string[] {
  return dispatcherArgv(request);
}

/**
 * The `--result-file` of a dispatcher command line (argv without the program), read back with
 * the dispatcher's own parser, whichever spelling started it. Null for any other command line.
 */
export function resultFileOfArgv(argv: string[]): string | null {
  if (!argv.some((arg) => arg.startsWith('--result-file'))) return null;
  const parsed = parseArgs(argv);
  return parsed.kind === 'args' ? parsed.args.resultFile : null;
}

/** One unit as the pre-flight check sees it. */
export interface PreflightUnit {
  id: string;
  addDirs: string[];
  /** The environment its dispatcher would get. */
  env: NodeJS.ProcessEnv;
  /** The absolute result path its dispatcher would publish to. */
  resultFile: string;
}

/**
 * Would the dispatcher accept this unit? Its settings (ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS and
 * the rest, the agy binary) by the dispatcher package's own check, a result path it can publish
 * to (the temp name beside it fits a file name), and its add-dirs existing
 * (the dispatcher refuses a missing one). Returns the one-line refusal, or null.
 */
export function dispatcherRefusal(unit: PreflightUnit, cwd: string): string | null {
  try {
    checkDispatcherSettings(unit.env, { locateBinary: () => locateAgy(unit.env, cwd) });
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  const resultProblem = resultPathProblem(unit.resultFile);
  if (resultProblem !== null) return resultProblem;
  for (const dir of unit.addDirs) {
    if (!isDirectory(dir)) return `add_dirs entry is not an existing directory: ${dir}`;
  }
  return null;
}
