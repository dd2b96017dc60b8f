import { createHash, randomUUID } from 'node:crypto';
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';

/** Every state directory's basename starts with this. */
export const STATE_DIR_PREFIX = 'prun-task-';

/** The one stdout line a dispatcher prints: `STATE-DIR <abs path>`. */
export const STATE_DIR_LINE_PREFIX = 'STATE-DIR ';

/**
 * The files (and the one folder) inside a unit state directory. Every tool spells a state
 * file name through this table, never as a literal of its own.
 */
export const STATE_FILES = {
  /** Worker stdout (stream-json events), written live. */
  tail: 'tail',
  /** Worker stderr, or the reason of an early failure. */
  tailStderr: 'tail.stderr-tmp',
  /** One line: the absolute result path. */
  resultFile: 'result-file',
  /** One line: the dispatcher's pid. */
  dispatchPid: 'dispatch-pid',
  /** One line: the worker's pid, as launched (never re-verified). */
  workerPid: 'worker-pid-unverified',
  /** Integer unix seconds of the dispatch. */
  timestamp: 'timestamp',
  /** Always `0`; kept for the Codex dispatcher's monitors. */
  preMtime: 'pre-mtime',
  /** The model routed to, then the model actually run. */
  model: 'model',
  /** MODEL-BALANCE / MODEL-FALLBACK / MODEL-RESOLVE lines. */
  quotaNote: 'quota-note',
  /** Output of the `--version` and `models` preflight. */
  preflightTail: 'preflight-tail',
  /** The relay prompt sent to the worker. */
  promptRelay: 'prompt-relay',
  /** Sorted names of the variables withheld from the worker (no values). */
  envWithheld: 'env-withheld',
  /** The conversation id from the worker's last init event. */
  conversationId: 'conversation-id',
  /** Path of the Node runtime that ran the dispatcher (replaces `python-interpreter`). */
  runtime: 'runtime',
  /** Written by the Python dispatcher instead of `runtime`; still readable. */
  legacyInterpreter: 'python-interpreter',
  /** How the worker was isolated (`isolation: pid` or `isolation: none` with a reason). */
  isolation: 'isolation',
  /** The worker's scratch directory when `PRUN_SCRATCH_CWD` is unset. */
  workDir: 'work',
} as const;

export type StateFileKey = keyof typeof STATE_FILES;

const UNIT_ID_CHARS = /^[A-Za-z0-9_-]+$/;

/** A unit id is non-empty ASCII letters, digits, `-` and `_` only. */
export function isValidUnitId(id: string): boolean {
  return UNIT_ID_CHARS.test(id);
}

/** First 8 lowercase hex digits of SHA-256 over the UTF-8 bytes of the path (no newline). */
export function cwdHash(cwd: string): string {
  return createHash('sha256').update(cwd, 'utf8').digest('hex').slice(0, 8);
}

/** 16 hex characters from a random UUID, as the dispatcher's nonce. */
export function newNonce(): string {
  return randomUUID().replaceAll('-', '').slice(0, 16);
}

export interface StateDirNameParts {
  cwd: string;
  unitId: string;
  pid: number;
  nonce: string;
}

/** `prun-task-<sha8(cwd)>-<unit-id>-<pid>-<nonce>` */
export function stateDirName({ cwd, unitId, pid, nonce }: StateDirNameParts): string {
  return `${STATE_DIR_PREFIX}${cwdHash(cwd)}-${unitId}-${pid}-${nonce}`;
}

/** Whether a directory entry name looks like a unit state directory. */
export function isStateDirName(name: string): boolean {
  return name.startsWith(STATE_DIR_PREFIX);
}

/**
 * Whether a name is the state directory of this very unit, by the whole naming rule
 * (`prun-task-<sha8 or nohash>-<unit-id>-<pid>-<16 hex>`), not just its prefix: what a tool
 * about to delete a recorded state dir checks first.
 */
export function isStateDirNameOf(name: string, unitId: string): boolean {
  if (!isValidUnitId(unitId) || !name.startsWith(STATE_DIR_PREFIX)) return false;
  const rest = name.slice(STATE_DIR_PREFIX.length);
  const hash = /^(?:[0-9a-f]{8}|nohash)-/.exec(rest);
  if (hash === null) return false;
  const afterHash = rest.slice(hash[0].length);
  if (!afterHash.startsWith(`${unitId}-`)) return false;
  return /^[0-9]+-[0-9a-f]{16}$/.test(afterHash.slice(unitId.length + 1));
}

export function formatStateDirLine(path: string): string {
  return `${STATE_DIR_LINE_PREFIX}${path}\n`;
}

/**
 * One operand line as it comes from a pipe: a `STATE-DIR <path>` line from a dispatcher or a
 * plain path. Returns null for a blank line. A trailing CR (CRLF input) is dropped.
 */
export function parseOperandLine(line: string): string | null {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  const path = text.startsWith(STATE_DIR_LINE_PREFIX) ? text.slice(STATE_DIR_LINE_PREFIX.length) : text;
  return path.trim() === '' ? null : path;
}

function isWritableDir(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The temporary directory Python's `tempfile.gettempdir()` would pick on POSIX: the first of
 * TMPDIR, TEMP, TMP, /tmp, /var/tmp, /usr/tmp, cwd that is a writable directory. Python probes
 * by creating a file; this asks access(2) instead, so read-only tools can share it.
 */
export function systemTempDir(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const candidates = [env.TMPDIR, env.TEMP, env.TMP, '/tmp', '/var/tmp', '/usr/tmp'];
  for (const candidate of candidates) {
    if (candidate && isWritableDir(resolve(cwd, candidate))) return resolve(cwd, candidate);
  }
  return cwd;
}
