import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readHead } from '@prun/kit/fs';
import { MESSAGE_PREFIX } from '@prun/dispatcher-agy';
import { resultFileOfArgv } from './dispatcher.js';
import { STATE_DIR_LINE_PREFIX, STATE_FILES, isProcessAlive, parseResultSummary, readStateEntry, type ResultSummary } from '@prun/unit-state';

// The FALLBACK reason and quota-block readers live with the texts' writers.
export { fallbackReason } from '@prun/unit-state';
export { isQuotaBlock } from '@prun/quota';
import { parseQuotaFallbackNote } from '@prun/quota';

/** The head of a result file (enough for its header and contract lines), or null if absent/empty. */
export function readResultHead(path: string, bytes = 8192): ResultSummary | 'unparsed' | null {
  // Bounded and non-blocking: a FIFO or device in a result's place is no result.
  const head = readHead(path, { maxBytes: bytes });
  if (!head.ok || head.bytes.length === 0) return null;
  return parseResultSummary(head.text) ?? 'unparsed';
}

/** How much of a dispatcher's captured stdout is read for its STATE-DIR line. */
const LOG_HEAD_BYTES = 1024 * 1024;

/** The last `STATE-DIR <path>` line a dispatcher printed into its captured stdout. */
export function stateDirFromLog(path: string): string | null {
  // A dispatcher prints STATE-DIR first: a bounded, non-blocking read of the log's head finds it.
  const head = readHead(path, { maxBytes: LOG_HEAD_BYTES });
  if (!head.ok) return null;
  const lines = head.text.split('\n').filter((line) => line.startsWith(STATE_DIR_LINE_PREFIX));
  const last = lines.at(-1);
  return last ? last.slice(STATE_DIR_LINE_PREFIX.length) : null;
}

/**
 * Whether a process is still running: alive by signal 0 and not a zombie. A dispatcher orphaned
 * by a killed batch may sit as a zombie under a parent that never reaps.
 */
export function isRunning(pid: number): boolean {
  if (!isProcessAlive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true;
  }
}

/** The `--result-file` a process was started with, from its command line (Linux /proc). */
function resultFileArgument(pid: number): string | null {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
  // argv[0] is node and argv[1] the dispatcher's bin; the final NUL leaves an empty last element.
  const options = argv.slice(2);
  if (options.at(-1) === '') options.pop();
  return resultFileOfArgv(options);
}

/**
 * When a process started, in clock ticks since boot (field 22 of /proc/<pid>/stat). With the pid
 * it names one process for the life of the machine: a reused pid has a later start time.
 */
export function processStartTime(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after its last `)`.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null;
}

/** A dispatcher as the ledger records it: its pid and, when known, its start time. */
export interface DispatcherIdentity {
  pid: number;
  start: string | null;
}

/**
 * Whether pid is a running dispatcher publishing to `resultPath` (the exact absolute path prun
 * passed) and, when `start` is given, the very process that was recorded: a recycled pid, or
 * another unit's dispatcher, is never taken for this unit's.
 */
export function isDispatcherFor(pid: number, resultPath: string, start: string | null = null): boolean {
  const argument = resultFileArgument(pid);
  if (argument === null || !samePlace(argument, resultPath) || !isRunning(pid)) return false;
  return start === null || processStartTime(pid) === start;
}

/** A result path with its folder's symlinks resolved (the file itself may not exist yet). */
function canonicalPath(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/**
 * Whether two result paths name one place: a batch directory reached through a symlink on one
 * run and by its real path on the next must still recognise its own live dispatchers.
 */
export function samePlace(a: string, b: string): boolean {
  return a === b || canonicalPath(a) === canonicalPath(b);
}

/**
 * A running dispatcher publishing to `resultPath`, found by its command line. This finds a
 * dispatcher that was started but not yet recorded when its batch process died.
 */
export function findDispatcherFor(resultPath: string): DispatcherIdentity | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const start = processStartTime(pid);
    if (start !== null && isDispatcherFor(pid, resultPath, start)) return { pid, start };
  }
  return null;
}

/** What the state directory says about the model: the one that ran, and the routing notes. */
export interface ModelFacts {
  model: string | null;
  notes: string[];
  /** A MODEL-FALLBACK forced by quota (the Claude and GPT group exhausted), not by a listing. */
  quotaFallback: boolean;
}

/** `<state-dir>/model` and `<state-dir>/quota-note`, read by the unit-state rules. */
export function readModelFacts(stateDir: string): ModelFacts {
  const model = readStateEntry(stateDir, STATE_FILES.model);
  const note = readStateEntry(stateDir, STATE_FILES.quotaNote);
  const notes = note.ok ? note.text.split('\n').map((line) => line.trim()).filter(Boolean) : [];
  const ran = model.ok ? model.text.trim() : '';
  return {
    model: ran === '' ? null : ran,
    notes,
    // Only the quota package's own note counts: a template-unlisted fallback is a listing matter.
    quotaFallback: notes.some((line) => parseQuotaFallbackNote(line) !== null),
  };
}

/** The last `bytes` of a regular file as text, or null. */
function logEnd(path: string, bytes: number): string | null {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined || !stats.isFile()) return null;
  const length = Math.min(stats.size, bytes);
  const tail = readHead(path, { maxBytes: length, offset: stats.size - length });
  return tail.ok ? tail.text : null;
}

const logLines = (text: string): string[] => text.split('\n').map((line) => line.trim()).filter(Boolean);

/** How much of a dispatch's stderr log is searched for its reason (the echo after it is bounded to 80 + 80 lines). */
const REASON_SEARCH_BYTES = 1024 * 1024;

/**
 * The line of a dispatcher's stderr that says why it ended: its last own message
 * (`dispatch-task-agy: ...`) that is not a routing note it printed before the run (those are
 * also its state dir's `quota-note` lines), since after its reason it echoes the worker's last
 * output lines, which say nothing of why the dispatch failed; without one, the last line.
 */
export function dispatchReasonLine(logText: string, routingNotes: readonly string[]): string | null {
  const lines = logLines(logText);
  const notes = new Set(routingNotes.map((note) => note.trim()));
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const line = lines[i]!;
    if (line.startsWith(MESSAGE_PREFIX) && !notes.has(line.slice(MESSAGE_PREFIX.length).trim())) return line;
  }
  return lines.at(-1) ?? null;
}

/** `dispatchReasonLine` of a unit's stderr log, with its state dir's routing notes. */
export function dispatchReason(logPath: string, stateDir: string | null): string | null {
  const text = logEnd(logPath, REASON_SEARCH_BYTES);
  if (text === null) return null;
  const notes = stateDir === null ? null : readStateEntry(stateDir, STATE_FILES.quotaNote);
  return dispatchReasonLine(text, notes?.ok === true ? notes.text.split('\n') : []);
}

/** Whether a state directory recorded a conversation a follow-up turn can continue. */
export function hasConversation(stateDir: string): boolean {
  const entry = readStateEntry(stateDir, STATE_FILES.conversationId);
  return entry.ok && entry.text.trim() !== '';
}
