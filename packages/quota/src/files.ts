import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
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
 * Writes `text` so readers see the old file or the new one, never a part: a temp file in the
 * same directory, then rename. The temp file is removed if anything fails.
 */
export async function writeFileAtomic(filePath: string, text: string): Promise<void> {
  await mkdir(path.dirname(filePath), { recursive: true });
  const temp = `${filePath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, text, { encoding: 'utf8', mode: 0o644, flag: 'wx' });
    await rename(temp, filePath);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}
