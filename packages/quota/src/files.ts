import { readFile, stat } from 'node:fs/promises';
import { writeFileAtomic as writeAtomic } from '@prun/kit/fs';
import { parseJsonLenient } from './json.js';

/** Seconds since the file's mtime (never negative), or null when it cannot be stat'ed. */
export async function fileAgeSeconds(filePath: string, nowMs: number): Promise<number | null> {
  try {
    const info = await stat(filePath);
    return Math.max(0, (nowMs - info.mtimeMs) / 1000);
  } catch {
    return null;
  }
}

/** The parsed JSON of a snapshot file, or null for a missing, unreadable or malformed file. */
export async function readJsonFile(filePath: string): Promise<unknown> {
  try {
    const bytes = await readFile(filePath);
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
    return parseJsonLenient(text);
  } catch {
    return null;
  }
}

/**
 * Writes `text` so readers see the old file or the new one, never a part: @prun/kit/fs's
 * durable atomic writer (temp file in the same directory, fsync, rename, directory fsync; the
 * temp file is removed if anything fails). Creates the directory.
 */
export async function writeFileAtomic(filePath: string, text: string): Promise<void> {
  writeAtomic(filePath, text, { tag: 'prun-quota', mode: 0o644 });
}
