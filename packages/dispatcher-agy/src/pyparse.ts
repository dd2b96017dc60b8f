import { pyStrip } from '@prun/kit/py';

/**
 * Python's `int(text)` for base 10: surrounding whitespace, one sign, `_` between digits and
 * any Unicode decimal digit. Returns null where Python raises ValueError. Coordinators already
 * set these variables for the Python original, so every spelling it took must keep working.
 */
export function parsePythonInt(text: string): bigint | null {
  const body = pyStrip(text);
  if (!/^[+-]?\p{Nd}+(?:_\p{Nd}+)*$/u.test(body)) return null;
  const negative = body.startsWith('-');
  let digits = '';
  for (const ch of body.replace(/^[+-]/, '').replaceAll('_', '')) digits += String(unicodeDigitValue(ch));
  const value = BigInt(digits);
  return negative ? -value : value;
}

// Unicode decimal digits come in contiguous runs of ten starting at zero, and some runs sit back
// to back (mathematical digits), so the value is the offset from the start of the maximal run,
// modulo ten.
function unicodeDigitValue(ch: string): number {
  const cp = ch.codePointAt(0)!;
  let start = cp;
  while (start > 0 && /\p{Nd}/u.test(String.fromCodePoint(start - 1))) start -= 1;
  return (cp - start) % 10;
}

/** A positive integer setting as the original reads it, or null when it is not one. */
export function parsePositiveSeconds(raw: string): number | null {
  const value = parsePythonInt(raw);
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

