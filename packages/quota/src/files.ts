import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { removeStaleTemps, writeFileAtomic as writeAtomic } from '@prun/kit/fs';

const TEMP_TAG = 'prun-quota';
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
 * temp file is removed if anything fails). Creates the directory. Temp files a killed writer
 * left beside it (`.<name>.prun-quota-<dead pid>-<nonce>.tmp`) are removed first.
 */
export async function writeFileAtomic(filePath: string, text: string): Promise<void> {
  // A refresh killed mid-write (kill -9, a reboot) leaves its temp file; the next write tidies up.
  removeStaleTemps(path.dirname(filePath), { tag: TEMP_TAG });
  writeAtomic(filePath, text, { tag: TEMP_TAG, mode: 0o644 });
}
