// Small text and file helpers shared by the commands and the runner.
import { closeSync, openSync, readFileSync, rmSync, appendFileSync } from 'node:fs';
import { removeStaleTemps, writeFileAtomic } from '@prun/kit/fs';
import { pyFormatG, pyInt, pyJsonLoads, pySplit, pyStr, pyStrip } from '@prun/kit/py';

export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export function readJson(path: string): unknown {
  const text = readText(path);
  return text === undefined ? undefined : parsePythonJson(text);
}

/**
 * JSON as Python's json.loads reads it: multi_agent.py writes `Infinity` (a `--timeout inf`) and
 * `NaN` bare, which JSON.parse refuses. Undefined when the text is not JSON at all.
 */
export function parsePythonJson(text: string): unknown {
  try {
    return pyJsonLoads(text);
  } catch {
    return undefined;
  }
}

/**
 * multi_agent.py's read_int: `int((read_text(path) or "").strip())`, None on ValueError. A
 * bigint, as Python's int has no size limit and the value is printed back in progress lines.
 */
export function readInt(path: string): bigint | undefined {
  return pyInt(pyStrip(readText(path) ?? '')) ?? undefined;
}

/**
 * Publish a state file through a temporary file in the same directory and a rename; the
 * temporary file goes on failure too. Not fsynced, as in the original: a state file is
 * rewritten on every run, and its readers only need never to see half of it.
 */
export function writeAtomic(path: string, text: string): void {
  writeFileAtomic(path, text, { durable: false, createParent: false });
}

/**
 * Remove the temporary files `writeAtomic` writers left in `dir` when they were killed mid-write
 * (their pid is dead); a live writer's file is kept. Called as a run starts, with the job's lock
 * held, so a killed run's temporary file does not stay forever.
 */
export function removeDeadWritersTemps(dir: string): void {
  removeStaleTemps(dir);
}

export function removeFile(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Already gone or not ours to remove; either way nothing to do.
  }
}

export function appendText(path: string, text: string): void {
  try {
    appendFileSync(path, text, 'utf8');
  } catch {
    // Progress is a convenience; a full disk must not stop the run.
  }
}

export function closeQuietly(fd: number | undefined): void {
  if (fd === undefined) return;
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
}

export function openForAppend(path: string): number {
  return openSync(path, 'a');
}

/** `2026-01-31T12:00:00Z`, the timestamp format of started_at and ended_at. */
export function utcNow(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Seconds since the epoch for a utcNow() timestamp, or undefined. */
export function parseUtc(text: string | undefined): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/.exec((text ?? '').trim());
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match.map(Number) as [number, number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

/** Local wall-clock `HH:MM:SS`, the prefix of progress.log lines. */
export function localClock(date: Date = new Date()): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.trunc(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** multi_agent.py's excerpt: `" ".join(str(text).split())`, cut to `limit` characters with an ellipsis. */
export function excerpt(text: unknown, limit = 120): string {
  const flat = pySplit(pyStr(text)).join(' ');
  const chars = [...flat];
  return chars.length <= limit ? flat : chars.slice(0, limit - 3).join('') + '...';
}

// Python's format(value, "g") and shlex.quote, so seconds in messages and the printed session
// command are the same in both programs; their home is @prun/kit/py.
export { pyFormatG as formatG, shlexQuote as shellQuote } from '@prun/kit/py';

export function formatSeconds(value: number | null | undefined): string {
  return value === null || value === undefined ? 'none' : pyFormatG(value);
}
