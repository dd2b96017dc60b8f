// The batch ledger (`<batch dir>/ledger.jsonl`): one JSON line per change of a unit's state,
// written by `prun batch` and read by prun (resume, status, clean) and by report-state's
// `--batch` (the state directories a batch recorded). Its one home is here, below both, so no
// package parses the format a second time. On its own subpath: it loads zod.
import * as nodeFs from 'node:fs';
import * as nodePath from 'node:path';
import { CliError, EXIT_USAGE } from '@prun/kit/cli';
import { errorWords, readHead } from '@prun/kit/fs';
import { z } from 'zod';

/** The files of a batch directory that other tools find it by. */
export const BATCH_FILES = { plan: 'plan.json', ledger: 'ledger.jsonl' } as const;

/**
 * A batch directory operand (`prun clean DIR`, `--batch DIR`, ...) made absolute. An empty one
 * would resolve to the working directory, so `prun clean "$DIR"` with DIR unset would act on
 * whatever batch the user stands in: refused as a usage error (exit 2), never guessed.
 */
export function resolveBatchDir(operand: string, cwd: string): string {
  if (operand.trim() === '') throw new CliError('the batch directory must not be empty', { exitCode: EXIT_USAGE });
  return nodePath.resolve(cwd, operand);
}

/**
 * Why `dir` is not a batch directory, or null when it is one: prun publishes a batch whole, a
 * directory holding a plan.json file and the ledger. Worded to follow "not a batch directory (":
 * `no such directory`, `not a directory`, `no plan.json`, `plan.json is not a regular file`, or
 * why the kernel refused the look (`permission denied`, `too many levels of symbolic links`,
 * `plan.json: permission denied` in a directory that cannot be searched). With `ledger: false` a
 * missing ledger is left to the caller's own ledger rules (prun's readers and `--resume` tell a
 * lost ledger beside results, exit 102, from a batch that has none yet).
 */
export function batchDirProblem(dir: string, { ledger = true }: { ledger?: boolean } = {}): string | null {
  const look = statOf(dir);
  if (!(look instanceof nodeFs.Stats)) return look === 'ENOENT' ? 'no such directory' : errorWords(look);
  if (!look.isDirectory()) return 'not a directory';
  for (const name of ledger ? [BATCH_FILES.plan, BATCH_FILES.ledger] : [BATCH_FILES.plan]) {
    const file = statOf(nodePath.join(dir, name));
    if (file === 'ENOENT') return `no ${name}`;
    if (!(file instanceof nodeFs.Stats)) return `${name}: ${errorWords(file)}`;
    if (name === BATCH_FILES.plan && !file.isFile()) return `${name} is not a regular file`;
  }
  return null;
}

/** The message every reader refuses a non-batch directory with (its name made printable by the error printer). */
export const notABatchDirectory = (dir: string, problem: string): string => `not a batch directory (${problem}): ${dir}`;

/** A path's stat (following links), `ENOENT` when nothing is there, or the error that refused the look. */
function statOf(path: string): nodeFs.Stats | 'ENOENT' | unknown {
  try {
    return nodeFs.statSync(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'ENOENT' : error;
  }
}

/**
 * A unit's states. `interrupted`: stopped by a signal the batch passed on (SIGINT, SIGTERM,
 * SIGHUP); `--resume` runs it again. `invalid`: its dispatcher published a result that does not
 * follow the return contract; it counts as a failure and `--retry-failed` asks for a restatement.
 * `cancelled`: stopped or withdrawn by `prun cancel`; never run again, its dependents fail.
 */
export const UNIT_STATUSES = ['queued', 'running', 'done', 'failed', 'deferred', 'interrupted', 'invalid', 'cancelled'] as const;
export type UnitStatus = (typeof UNIT_STATUSES)[number];

/** One line of `ledger.jsonl`: the state of one unit at one moment. The schema is documented in prun's README. */
export const LedgerEntrySchema = z.object({
  id: z.string(),
  status: z.enum(UNIT_STATUSES),
  /** The model that ran, from `<state-dir>/model`; until the dispatcher names it, the plan's model (or null: the default). */
  model: z.string().nullable(),
  mode: z.string().nullable(),
  prompt_file: z.string(),
  clone_dir: z.string().nullable(),
  result_file: z.string(),
  state_dir: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  /** Why a unit failed without a dispatch, was deferred, invalid, interrupted, or was adopted after a crash. */
  note: z.string().optional(),
  /** For `deferred`: when the next attempt is due (ISO-8601). */
  retry_at: z.string().optional(),
  /** Dispatch attempts so far for this unit, retries and quota deferrals included. */
  attempt: z.number().int().nonnegative().optional(),
  /** The dispatcher's pid while `running`, so a resumed batch can adopt a live dispatch. */
  dispatcher_pid: z.number().int().positive().optional(),
  /** The dispatcher's start time (field 22 of /proc/<pid>/stat), so a reused pid is never taken for it. */
  dispatcher_start: z.string().optional(),
  /** While `running`: the dispatch runs inside the batch's supervisor process, which dispatcher_pid and dispatcher_start name. */
  supervised: z.boolean().optional(),
  /** While `running`: the signal the batch passed on to the dispatcher to stop it. */
  stop_signal: z.string().optional(),
  /** While `running`, with `stop_signal`: why the batch stopped it, when not for a signal it got itself. */
  stop_reason: z.enum(['cancel', 'halt']).optional(),
  /** Which automatic retry (`--retries`) this attempt is: 1 for the first retry. */
  retry: z.number().int().positive().optional(),
  /** The dispatcher's `quota-note` lines (MODEL-BALANCE, MODEL-FALLBACK, MODEL-RESOLVE), when it wrote one. */
  model_notes: z.array(z.string()).optional(),
  /** Whether quota routing fell back to another group's model (a quota MODEL-FALLBACK). */
  quota_fallback: z.boolean().optional(),
});
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

/** The file-system calls an append makes; tests pass a recording stand-in to check the order. */
export interface AppendIo {
  openSync: (path: string, flags: string) => number;
  writeSync: (fd: number, data: string) => number;
  fsyncSync: (fd: number) => void;
  closeSync: (fd: number) => void;
}

/** How an append reaches the disk. */
export interface AppendOptions {
  /**
   * false: written (one O_APPEND write, so a reader and a driver killed right after see it) but
   * not fsynced here; the caller fsyncs the ledger later with `syncLedger`, or with the next
   * synced append (fsync flushes every write made to the file before it). Default true.
   */
  sync?: boolean;
}

/**
 * Append entries as lines, all with a single O_APPEND write, and fsync it before returning
 * (unless `sync` is false), so a batch killed at any moment leaves a ledger whose every complete
 * line is true. A torn last line (a crash inside the write) is set aside by `repairLedgerTail`
 * before the next append.
 */
export function appendLedger(path: string, entries: LedgerEntry | readonly LedgerEntry[], io: AppendIo = nodeFs, options: AppendOptions = {}): void {
  const list: readonly LedgerEntry[] = Array.isArray(entries) ? entries : [entries as LedgerEntry];
  if (list.length === 0) return;
  const text = list.map((entry) => `${JSON.stringify(LedgerEntrySchema.parse(entry))}\n`).join('');
  const fd = io.openSync(path, 'a');
  try {
    const written = io.writeSync(fd, text);
    if (written !== Buffer.byteLength(text)) throw new Error(`short write to ${path}`);
    if (options.sync !== false) io.fsyncSync(fd);
  } finally {
    io.closeSync(fd);
  }
}

/** fsync the ledger: every line appended so far (also those appended with `sync: false`) is on the disk. */
export function syncLedger(path: string, io: AppendIo = nodeFs): void {
  const fd = io.openSync(path, 'a');
  try {
    io.fsyncSync(fd);
  } finally {
    io.closeSync(fd);
  }
}

export interface LedgerRead {
  /** Whether the file exists. */
  exists: boolean;
  entries: LedgerEntry[];
  /** The latest entry of each unit, by id. */
  latest: Map<string, LedgerEntry>;
  /** Complete lines (newline-terminated) that are not valid entries: 1-based numbers. */
  badLines: number[];
  /** A last line without its newline that is not a valid entry: a crash mid-append. */
  tornTail: { line: number; offset: number; bytes: Buffer } | null;
  /** A last line without its newline that is a whole valid entry (only the newline is missing). */
  unterminated: boolean;
}

/**
 * A ledger that cannot be read at all (not a regular file, over the bound, unreadable). The
 * message names the file; each caller picks its exit code (prun: 102).
 */
export class LedgerError extends CliError {
  constructor(message: string) {
    super(message);
    this.name = 'LedgerError';
  }
}

function parseEntry(text: string): LedgerEntry | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = LedgerEntrySchema.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/** A ledger beyond this is not one prun wrote (a 10,000-unit batch's ledger is a few MiB). */
export const LEDGER_MAX_BYTES = 256 * 1024 * 1024;

/** Read a ledger, sorting its lines into entries, bad complete lines and a torn tail. Changes nothing. */
export function readLedger(path: string): LedgerRead {
  // A ledger is read whole, but never from a FIFO or device (it would block) and never past a bound.
  const missing: LedgerRead = { exists: false, entries: [], latest: new Map(), badLines: [], tornTail: null, unterminated: false };
  let stats: nodeFs.Stats | undefined;
  try {
    stats = nodeFs.statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    throw new LedgerError(`cannot read the ledger ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  if (stats === undefined) return missing;
  if (!stats.isFile()) throw new LedgerError(`the ledger ${path} is not a regular file`);
  if (stats.size > LEDGER_MAX_BYTES) throw new LedgerError(`the ledger ${path} is larger than ${LEDGER_MAX_BYTES} bytes`);
  const head = readHead(path, { maxBytes: stats.size });
  if (!head.ok) {
    if (head.problem === 'absent') return missing;
    throw new LedgerError(`cannot read the ledger ${path} (${head.problem})`);
  }
  const bytes = head.bytes;
  const entries: LedgerEntry[] = [];
  const badLines: number[] = [];
  const latest = new Map<string, LedgerEntry>();
  let tornTail: LedgerRead['tornTail'] = null;
  let unterminated = false;
  let offset = 0;
  let line = 0;
  while (offset < bytes.length) {
    line += 1;
    const end = bytes.indexOf(0x0a, offset);
    const complete = end !== -1;
    const chunk = bytes.subarray(offset, complete ? end : bytes.length);
    const text = chunk.toString('utf8');
    const entry = text.trim() === '' ? undefined : parseEntry(text);
    if (entry) {
      entries.push(entry);
      latest.set(entry.id, entry);
      if (!complete) unterminated = true;
    } else if (entry === null) {
      if (complete) badLines.push(line);
      else tornTail = { line, offset, bytes: Buffer.from(chunk) };
    }
    if (!complete) break;
    offset = end + 1;
  }
  return { exists: true, entries, latest, badLines, tornTail, unterminated };
}

/** Where a torn tail is kept: `ledger.jsonl.torn-<n>`, the first free n. */
function tornSidePath(path: string): string {
  for (let n = 1; ; n += 1) {
    const candidate = `${path}.torn-${n}`;
    if (!nodeFs.existsSync(candidate)) return candidate;
  }
}

/**
 * Make the ledger safe to append to (only the batch's driver calls this, under its lock): a torn
 * last line is copied to `ledger.jsonl.torn-<n>` (fsynced) and then cut from the ledger, so the
 * next record starts on a line of its own; a whole last entry missing only its newline gets it.
 * Returns the side file's path when a torn line was set aside.
 */
export function repairLedgerTail(path: string, read: LedgerRead): string | null {
  if (read.tornTail) {
    const side = tornSidePath(path);
    const fd = nodeFs.openSync(side, 'wx');
    try {
      nodeFs.writeSync(fd, read.tornTail.bytes);
      nodeFs.fsyncSync(fd);
    } finally {
      nodeFs.closeSync(fd);
    }
    const ledger = nodeFs.openSync(path, 'r+');
    try {
      nodeFs.ftruncateSync(ledger, read.tornTail.offset);
      nodeFs.fsyncSync(ledger);
    } finally {
      nodeFs.closeSync(ledger);
    }
    return side;
  }
  if (read.unterminated) {
    const fd = nodeFs.openSync(path, 'a');
    try {
      nodeFs.writeSync(fd, '\n');
      nodeFs.fsyncSync(fd);
    } finally {
      nodeFs.closeSync(fd);
    }
  }
  return null;
}

/** One state directory a batch recorded for a unit (every attempt's, in ledger order). */
export interface RecordedStateDir {
  id: string;
  stateDir: string;
}

/**
 * Every state directory a ledger names, each once, in the order first recorded. A unit retried
 * or deferred has one per attempt. Entries whose line is not valid are not read (see `badLines`).
 */
export function recordedStateDirs(read: Pick<LedgerRead, 'entries'>): RecordedStateDir[] {
  const seen = new Set<string>();
  const dirs: RecordedStateDir[] = [];
  for (const entry of read.entries) {
    if (entry.state_dir === null || seen.has(entry.state_dir)) continue;
    seen.add(entry.state_dir);
    dirs.push({ id: entry.id, stateDir: entry.state_dir });
  }
  return dirs;
}
