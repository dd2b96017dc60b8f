import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { STATE_DIR_LINE_PREFIX, STATE_FILES, isProcessAlive, parseResultSummary, readStateEntry, type ResultSummary } from '@prun/unit-state';

/** The head of a result file (enough for its header and contract lines), or null if absent/empty. */
export function readResultHead(path: string, bytes = 8192): ResultSummary | 'unparsed' | null {
  let fd: number;
  try {
    if (!statSync(path).isFile()) return null;
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const buffer = Buffer.alloc(bytes);
    const n = readSync(fd, buffer, 0, bytes, 0);
    if (n === 0) return null;
    return parseResultSummary(buffer.subarray(0, n).toString('utf8')) ?? 'unparsed';
  } finally {
    closeSync(fd);
  }
}

/** The reason a FALLBACK gives, from its `Conclusion: INCOMPLETE; <reason>` line. */
export function fallbackReason(summary: ResultSummary): string {
  const conclusion = summary.conclusion ?? '';
  return conclusion.startsWith('INCOMPLETE; ') ? conclusion.slice('INCOMPLETE; '.length) : conclusion;
}

/** Whether a dispatcher's refusal reason is a quota block (its exit code was 75). */
export function isQuotaBlock(reason: string): boolean {
  return /Agy (Gemini )?quota group(s)? (is|are) exhausted|both Agy quota groups are exhausted/.test(reason);
}

/** The last `STATE-DIR <path>` line a dispatcher printed into its captured stdout. */
export function stateDirFromLog(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n').filter((line) => line.startsWith(STATE_DIR_LINE_PREFIX));
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
  const at = argv.indexOf('--result-file');
  return at === -1 ? null : (argv[at + 1] ?? null);
}

/**
 * Whether pid is a running dispatcher publishing to `resultPath` (the exact absolute path prun
 * passed), so a recycled pid, or another unit's dispatcher, is never taken for this unit's.
 */
export function isDispatcherFor(pid: number, resultPath: string): boolean {
  return resultFileArgument(pid) === resultPath && isRunning(pid);
}

/**
 * The pid of a running dispatcher publishing to `resultPath`, found by its command line. This
 * finds a dispatcher that was started but not yet recorded when its batch process died.
 */
export function findDispatcherFor(resultPath: string): number | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (/^\d+$/.test(entry) && isDispatcherFor(Number(entry), resultPath)) return Number(entry);
  }
  return null;
}

/** Whether a state directory recorded a conversation a follow-up turn can continue. */
export function hasConversation(stateDir: string): boolean {
  const entry = readStateEntry(stateDir, STATE_FILES.conversationId);
  return entry.ok && entry.text.trim() !== '';
}
