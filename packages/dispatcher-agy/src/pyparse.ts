import { pyInt, pyStrip } from '@prun/kit/py';

/**
 * Python's `int(text)` for base 10 (kit's pyInt). Coordinators already set these variables for
 * the Python original, so every spelling it took must keep working.
 */
export { pyInt as parsePythonInt };

/** A positive integer setting as the original reads it, or null when it is not one. */
export function parsePositiveSeconds(raw: string): number | null {
  const value = pyInt(raw);
  if (value === null || value <= 0n) return null;
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

/** A non-negative number of seconds (decimals allowed), for prun's own knobs. */
export function parseNonNegativeSeconds(raw: string): number | null {
  const text = pyStrip(raw);
  if (!/^\d+(?:\.\d+)?$|^\.\d+$/.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

