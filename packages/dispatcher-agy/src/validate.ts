import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { isDirectory, readHead } from '@prun/kit/fs';
import { isAbsolute, join } from 'node:path';
import { pyStrip } from '@prun/kit/py';
import { isValidUnitId } from '@prun/unit-state';
import type { Mode, ParsedArgs } from './args.js';
import { type LaunchSettings, MAX_CONVERSATION_ID_BYTES, MAX_PROMPT_BYTES, NO_BINARY_EXIT, NO_BINARY_MESSAGE, UNIT_ID_MESSAGE, UsageError, parseLaunchSettings, resultPathProblem } from './settings.js';

export { UsageError };

export interface DispatchConfig extends LaunchSettings {
  cwd: string;
  unitId: string;
  promptPath: string;
  prompt: string;
  resultPath: string;
  mode: Mode;
  addDirs: string[];
  conversationId: string | null;
  exe: string;
  /** `PRUN_SCRATCH_CWD` resolved, or null for `<state-dir>/work`. */
  scratchDir: string | null;
}

export interface ValidateDeps {
  env: NodeJS.ProcessEnv;
  cwd: string;
  defaultModel: string;
  /** Resolves ANTIGRAVITY_BIN as the dispatcher does (README "How it works", step 1); null if none. */
  locateBinary: (env: NodeJS.ProcessEnv, cwd: string) => string | null;
}

/**
 * Python's `Path(cwd) / path`: joined onto cwd, with pathlib's only clean-ups (repeated and
 * trailing slashes, `.` segments); `..` stays as written.
 */
export function joinOntoCwd(cwd: string, path: string): string {
  const joined = isAbsolute(path) ? path : `${cwd}/${path}`;
  const parts = joined.split('/').filter((part) => part !== '' && part !== '.');
  return `/${parts.join('/')}`;
}

/**
 * Python's `Path.resolve(strict=False)` (posixpath.realpath): symlinks are followed component by
 * component, even one whose target does not exist yet, and a `..` after a symlink applies to
 * the link's target, not to the link's own directory. A loop stops resolution where it is.
 */
export function resolveNonStrict(path: string): string {
  // No lexical clean-up first: `link/..` must climb from where the link points.
  const absolute = isAbsolute(path) ? path : `${process.cwd()}/${path}`;
  return joinRealpath('/', absolute, new Map()).path;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

function joinRealpath(start: string, rest: string, seen: Map<string, string | null>): { path: string; ok: boolean } {
  let path = rest.startsWith('/') ? '/' : start;
  const names = rest.split('/');
  for (let i = 0; i < names.length; i += 1) {
    const name = names[i]!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      path = parentOf(path);
      continue;
    }
    const next = path === '/' ? `/${name}` : `${path}/${name}`;
    let isLink = false;
    try {
      // A missing name (a result not written yet, every unit) is answered without an Error.
      isLink = lstatSync(next, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
    } catch {
      isLink = false;
    }
    if (!isLink) {
      path = next;
      continue;
    }
    const remaining = names.slice(i + 1).join('/');
    if (seen.has(next)) {
      const known = seen.get(next);
      if (known !== null && known !== undefined) {
        path = known;
        continue;
      }
      return { path: remaining === '' ? next : join(next, remaining), ok: false };
    }
    seen.set(next, null);
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      path = next;
      continue;
    }
    const inner = joinRealpath(path, target, seen);
    if (!inner.ok) return { path: remaining === '' ? inner.path : join(inner.path, remaining), ok: false };
    path = inner.path;
    seen.set(next, path);
  }
  return { path, ok: true };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Strict UTF-8 decoding; Python keeps a BOM as U+FEFF with the plain utf-8 codec. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** Python text-mode reading: CRLF and lone CR become LF. */
export function universalNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

/** The OS error's own text, one line. */
export function osErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}

/**
 * The checks of README "How it works", step 1, after argparse, in their exact order; throws
 * UsageError (exit 2, or 70 for a missing binary) with the original's message. Touches the file
 * system only to read.
 */
export function validate(args: ParsedArgs, deps: ValidateDeps): DispatchConfig {
  const { env, cwd } = deps;
  if (!isValidUnitId(args.unitId)) throw new UsageError(UNIT_ID_MESSAGE);
  const promptPath = joinOntoCwd(cwd, args.promptFile);
  // Read once, bounded and without ever blocking: a FIFO or a device is "not a regular file"
  // at once (never opened for a blocking read), so signals are always honoured.
  const promptRead = readHead(promptPath, { maxBytes: MAX_PROMPT_BYTES, overflow: 'refuse' });
  if (!promptRead.ok && NOT_FOUND_PROBLEMS.has(promptRead.problem)) {
    throw new UsageError(`prompt file not found: ${promptPath}`);
  }

  const resultPath = resolveNonStrict(joinOntoCwd(cwd, args.resultFile));
  if (existsOrIsLink(resultPath)) {
    throw new UsageError(`result path already exists; use a fresh path: ${resultPath}`);
  }
  const nameProblem = resultPathProblem(resultPath);
  if (nameProblem !== null) throw new UsageError(nameProblem);

  if (!promptRead.ok) {
    const why = promptRead.problem === 'EntryTooLarge' ? `larger than ${MAX_PROMPT_BYTES} bytes: ${promptPath}` : `${promptRead.problem}: ${promptPath}`;
    throw new UsageError(`could not read prompt file: ${why}`);
  }
  const promptBytes = promptRead.bytes;
  const decoded = decodeUtf8(promptBytes);
  if (decoded === null) throw new UsageError(`prompt file is not valid UTF-8: ${promptPath}`);
  const prompt = universalNewlines(decoded);

  const scratchRaw = env.PRUN_SCRATCH_CWD ?? '';
  let mode = args.mode;
  if (mode === null) {
    if (scratchRaw !== '' || args.addDirs.length > 0) {
      throw new UsageError(
        'PRUN_SCRATCH_CWD and --add-dir require an explicit --mode plan or --mode accept-edits; use accept-edits only with disposable directories',
      );
    }
    mode = 'accept-edits';
  }

  const addDirs: string[] = [];
  for (const raw of args.addDirs) {
    if (pyStrip(raw) === '') throw new UsageError('--add-dir requires a non-empty directory path');
    const dir = resolveNonStrict(joinOntoCwd(cwd, raw));
    if (!isDirectory(dir)) throw new UsageError(`--add-dir path is not an existing directory: ${dir}`);
    addDirs.push(dir);
  }

  let conversationId: string | null = null;
  if (args.continueFrom !== null) {
    if (pyStrip(args.continueFrom) === '') {
      throw new UsageError('--continue-from requires a non-empty state directory path');
    }
    const idFile = joinOntoCwd(joinOntoCwd(cwd, args.continueFrom), 'conversation-id');
    const idRead = readHead(idFile, { maxBytes: MAX_CONVERSATION_ID_BYTES, overflow: 'refuse' });
    if (!idRead.ok) {
      if (idRead.problem === 'EntryTooLarge') {
        throw new UsageError(`--continue-from conversation-id file is larger than ${MAX_CONVERSATION_ID_BYTES} bytes: ${idFile}`);
      }
      if (idRead.problem === 'NotARegularFile' && !isDirectory(idFile)) {
        // A FIFO, socket or device: refused at once, never waited on.
        throw new UsageError(`--continue-from conversation-id file is not a regular file: ${idFile}`);
      }
      throw new UsageError(`--continue-from has no conversation-id file: ${idFile}`);
    }
    const bytes = idRead.bytes;
    const text = decodeUtf8(bytes);
    if (text === null) throw new UsageError(`--continue-from conversation-id file is not valid UTF-8: ${idFile}`);
    conversationId = pyStrip(universalNewlines(text));
    if (conversationId === '') throw new UsageError(`--continue-from conversation-id file is empty: ${idFile}`);
  }

  const exe = deps.locateBinary(env, cwd);
  if (exe === null) {
    throw new UsageError(NO_BINARY_MESSAGE, NO_BINARY_EXIT);
  }

  const settings = parseLaunchSettings(env, deps.defaultModel);

  return {
    cwd,
    unitId: args.unitId,
    promptPath,
    prompt,
    resultPath,
    mode,
    addDirs,
    conversationId,
    exe,
    ...settings,
    scratchDir: scratchRaw === '' ? null : resolveNonStrict(joinOntoCwd(cwd, scratchRaw)),
  };
}

/** What the original's "not an existing regular file" covered (a failing stat, or not a file). */
const NOT_FOUND_PROBLEMS: ReadonlySet<string> = new Set(['absent', 'NotARegularFile', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG']);

function existsOrIsLink(path: string): boolean {
  return existsSync(path);
}
