/**
 * JSON as the Python side reads and writes it, with @prun/kit/py's helpers.
 *
 * Python's `json` module reads and writes the bare literals `NaN`, `Infinity` and `-Infinity`,
 * which `JSON.parse` rejects. A snapshot holding one such bucket must not lose its other
 * buckets, so the literals are read and then become `null` (a value every reader here skips).
 */
import { pyFloatRepr, pyJsonDumps, pyJsonLoads } from '@prun/kit/py';

export function parseJsonLenient(text: string): unknown {
  return nonFiniteToNull(pyJsonLoads(text));
}

function nonFiniteToNull(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (Array.isArray(value)) return value.map(nonFiniteToNull);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: nonFiniteToNull(member), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/**
 * `json.dumps` with Python's defaults: `", "` and `": "` separators and everything outside
 * printable ASCII (U+007F included) escaped as `\uXXXX`, so a snapshot written here reads the
 * same as one written by `agent-quota.py`.
 */
export function pythonJsonDumps(value: unknown): string {
  return pyJsonDumps(value);
}

/** A float as Python prints it, with a fractional part even when integral (`repr(float)`). */
export const pythonFloat: (value: number) => string = pyFloatRepr;
