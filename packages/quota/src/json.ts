/**
 * JSON as the Python side reads and writes it.
 *
 * Python's `json` module reads and writes the bare literals `NaN`, `Infinity` and `-Infinity`,
 * which `JSON.parse` rejects. A snapshot holding one such bucket must not lose its other
 * buckets, so the literals become `null` (a value every reader here skips) before parsing.
 */
export function parseJsonLenient(text: string): unknown {
  return JSON.parse(replaceNonFiniteLiterals(text));
}

const NON_FINITE_LITERALS = ['-Infinity', 'Infinity', 'NaN'] as const;

/** A forward scan that leaves string contents alone (no regular expression over untrusted text). */
function replaceNonFiniteLiterals(text: string): string {
  if (!text.includes('NaN') && !text.includes('Infinity')) return text;
  let out = '';
  let inString = false;
  let index = 0;
  while (index < text.length) {
    const ch = text[index] as string;
    if (inString) {
      out += ch;
      if (ch === '\\' && index + 1 < text.length) {
        out += text[index + 1];
        index += 2;
        continue;
      }
      if (ch === '"') inString = false;
      index += 1;
      continue;
    }
    if (ch === '"') {
      inString = true;
      out += ch;
      index += 1;
      continue;
    }
    const literal = NON_FINITE_LITERALS.find((candidate) => text.startsWith(candidate, index));
    if (literal !== undefined) {
      out += 'null';
      index += literal.length;
      continue;
    }
    out += ch;
    index += 1;
  }
  return out;
}

/**
 * `json.dumps` with Python's defaults: `", "` and `": "` separators and non-ASCII escaped as
 * `\uXXXX`, so a snapshot written here reads the same as one written by `agent-quota.py`.
 */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return pythonNumber(value);
  if (typeof value === 'string') return asciiString(value);
  if (Array.isArray(value)) return `[${value.map((item) => pythonJsonDumps(item)).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(
      ([, item]) => item !== undefined,
    );
    return `{${entries.map(([key, item]) => `${asciiString(key)}: ${pythonJsonDumps(item)}`).join(', ')}}`;
  }
  return 'null';
}

function pythonNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  return JSON.stringify(value);
}

/** A float that Python would print with a fractional part even when it is integral. */
export function pythonFloat(value: number): string {
  const text = pythonNumber(value);
  return Number.isInteger(value) && !text.includes('e') ? `${text}.0` : text;
}

function asciiString(text: string): string {
  return JSON.stringify(text).replace(
    /[\u0080-\uffff]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
