// @prun/kit/py: the Python-compatibility helpers, each once. The originals are Python programs
// whose files and messages we must read and write byte for byte; JavaScript's trim, split,
// JSON.stringify and JSON.parse each differ from Python's in small ways that matter.
import { readFileSync } from 'node:fs';
import { constants as osConstants, userInfo } from 'node:os';
import { strerror } from '../errno.js';

// --- whitespace ---------------------------------------------------------------------------------

// Python's str.isspace set, which str.strip() and str.split() use. JavaScript's trim and \s differ:
// \x1c-\x1f and \x85 are Python whitespace, U+FEFF is not.
const PY_WHITESPACE_CODES = [
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
];
const PY_WHITESPACE = new Set(PY_WHITESPACE_CODES.map((code) => String.fromCharCode(code)));

/** The code points of Python's str.isspace set, for scanners that work on bytes. */
export const PY_WHITESPACE_CODE_POINTS: readonly number[] = PY_WHITESPACE_CODES;

/** A run of Python whitespace, for `text.replace(PY_WHITESPACE_RUN, ' ')`. */
export const PY_WHITESPACE_RUN = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;

/** Whether one character is whitespace by Python's `str.isspace`. */
export function isPyWhitespace(char: string | undefined): boolean {
  return char !== undefined && PY_WHITESPACE.has(char);
}

/** Python `str.strip()` with no argument. */
export function pyStrip(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && PY_WHITESPACE.has(value[start] as string)) start += 1;
  while (end > start && PY_WHITESPACE.has(value[end - 1] as string)) end -= 1;
  return value.slice(start, end);
}

/** Python `str.rstrip()` with no argument. */
export function pyRstrip(value: string): string {
  let end = value.length;
  while (end > 0 && PY_WHITESPACE.has(value[end - 1] as string)) end -= 1;
  return value.slice(0, end);
}

/** Python `str.split()` with no argument: runs of whitespace separate, no empty words. */
export function pySplit(value: string): string[] {
  const words: string[] = [];
  let index = 0;
  while (index < value.length) {
    while (index < value.length && PY_WHITESPACE.has(value[index] as string)) index += 1;
    if (index === value.length) break;
    const start = index;
    while (index < value.length && !PY_WHITESPACE.has(value[index] as string)) index += 1;
    words.push(value.slice(start, index));
  }
  return words;
}

// --- lines --------------------------------------------------------------------------------------

/** Python's str.splitlines() boundaries: more than the universal newlines a file iteration uses. */
export const PY_LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/** The characters `PY_LINE_BREAK` breaks at, one by one (`\r\n` is one break of two), for scanners that work on bytes. */
export const PY_LINE_BREAK_CODE_POINTS: readonly number[] = [0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029];

/** Python `str.splitlines()` (line ends dropped; no trailing empty line). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(PY_LINE_BREAK);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * The lines of a file Python reads in text mode (universal newlines: `\r\n`, `\r` and `\n` end
 * a line, nothing else does), line ends dropped; a final line end adds no empty line. Fewer
 * boundaries than `splitLines` (str.splitlines also breaks at \v, \f, \x1c-\x1e, NEL, U+2028/9).
 */
export function splitUniversalLines(text: string): string[] {
  const lines = text.split(/\r\n|\r|\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// --- sorted() of str -----------------------------------------------------------------------------

function isSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdfff;
}

/**
 * Python's order of `str` (`sorted()`, `<`): by code point, a lone surrogate (an undecodable
 * byte's escape) by its own value. JavaScript's `<` and default sort compare UTF-16 units, which
 * put U+E000..U+FFFF after astral characters.
 */
export function compareCodePoints(a: string, b: string): number {
  // UTF-16 order is code point order up to the first difference, unless a surrogate is
  // involved there: only then is the difference looked at code point by code point.
  const common = Math.min(a.length, b.length);
  let k = 0;
  while (k < common && a.charCodeAt(k) === b.charCodeAt(k)) k += 1;
  if (k === common) return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
  const ua = a.charCodeAt(k);
  const ub = b.charCodeAt(k);
  if (!isSurrogate(ua) && !isSurrogate(ub)) return ua < ub ? -1 : 1;
  return compareCodePointsFrom(a, b, k > 0 && isSurrogate(a.charCodeAt(k - 1)) ? k - 1 : k);
}

/** The slow comparison, from a position where both strings are in step. */
function compareCodePointsFrom(a: string, b: string, from: number): number {
  let i = from;
  let j = from;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(j) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return a.length - i === b.length - j ? 0 : a.length - i < b.length - j ? -1 : 1;
}

// --- repr ---------------------------------------------------------------------------------------

// str.isprintable: false for the categories Other (Cc, Cf, Cs, Co, Cn) and Separator (Zl, Zp,
// Zs) except the ASCII space. Node's Unicode tables decide; a character assigned in a newer
// Unicode than the Python at hand is printable here and escaped there.
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python `str.isprintable()` of one code point. */
export function isPyPrintable(char: string): boolean {
  return char === ' ' || !NOT_PRINTABLE.test(char);
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

/** Python `repr()` of a str: its quote choice, escapes, and `\x`/`\u`/`\U` for the unprintable. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === quote || char === '\\') out += `\\${char}`;
    else if (char === '\t') out += '\\t';
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${hex(code, 2)}`;
    else if (code < 0x7f || isPyPrintable(char)) out += char;
    else if (code <= 0xff) out += `\\x${hex(code, 2)}`;
    else if (code <= 0xffff) out += `\\u${hex(code, 4)}`;
    else out += `\\U${hex(code, 8)}`;
  }
  return out + quote;
}

/** Python `repr()` of a list of str: `['a', "it's", '\x85']`. */
export function pyListRepr(items: readonly string[]): string {
  return `[${items.map(pyRepr).join(', ')}]`;
}

/**
 * Python `str()` of a value as `json.loads` gives it (None, True/False, int, float, str, list,
 * dict): a str is itself, anything else its repr (`[1, 'a', None]`, `{'k': 1.5}`). An integral
 * number below 1e21 is an int, as json.loads reads JSON's digits; JSON's `5.0`, which JavaScript
 * reads as 5, therefore prints `5` here where Python prints `5.0`.
 */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyValueRepr(value);
}

function pyValueRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 1e21 ? String(value) : pyFloatRepr(value);
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'string') return pyRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyValueRepr).join(', ')}]`;
  if (typeof value === 'object') {
    const items = Object.entries(value as Record<string, unknown>).map(([key, member]) => `${pyRepr(key)}: ${pyValueRepr(member)}`);
    return `{${items.join(', ')}}`;
  }
  return String(value);
}

// --- int() and float() of a str --------------------------------------------------------------------

// int() and float() strip less than str.strip(): CPython maps non-ASCII whitespace to a space and
// non-ASCII decimal digits to ASCII ones, then skips only ASCII whitespace, so \x1c-\x1f (str
// whitespace, but ASCII) stay and make the text invalid, and U+FEFF (not whitespace) does too.
const PY_NUMBER_SPACE = new Set([...PY_WHITESPACE].filter((char) => char >= '\x7f' || ' \t\n\v\f\r'.includes(char)));
const UNICODE_DIGIT = /\p{Nd}/u;

/** The decimal value of a Unicode decimal digit (category Nd), or -1. */
function decimalValue(char: string): number {
  if (char >= '0' && char <= '9') return char.charCodeAt(0) - 48;
  if (!UNICODE_DIGIT.test(char)) return -1;
  // Nd digits come in contiguous runs of ten starting at zero, and some runs sit back to back
  // (the mathematical digits), so the value is the offset from the start of the run, modulo ten.
  const code = char.codePointAt(0) as number;
  let start = code;
  while (start > 0 && UNICODE_DIGIT.test(String.fromCodePoint(start - 1))) start -= 1;
  return (code - start) % 10;
}

/**
 * The text as CPython's int() and float() see it: number whitespace stripped, every Unicode
 * decimal digit as its ASCII digit; null when another non-ASCII character is left.
 */
function asciiNumberText(text: string): string | null {
  const chars = [...text];
  let start = 0;
  let end = chars.length;
  while (start < end && PY_NUMBER_SPACE.has(chars[start] as string)) start += 1;
  while (end > start && PY_NUMBER_SPACE.has(chars[end - 1] as string)) end -= 1;
  let out = '';
  for (const char of chars.slice(start, end)) {
    if (char < '\x80') out += char;
    else {
      const digit = decimalValue(char);
      if (digit < 0) return null;
      out += String(digit);
    }
  }
  return out;
}

// A run of digits holding single underscores between digits (PEP 515), as both accept.
const DIGITS = String.raw`\d(?:_?\d)*`;
const INT_TEXT = new RegExp(`^[+-]?${DIGITS}$`);
const FLOAT_TEXT = new RegExp(`^[+-]?(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?$`);
const FLOAT_WORD = /^([+-]?)(?:(inf|infinity)|nan)$/i;

/**
 * Python `int(text)` of a str (base 10): surrounding whitespace, one sign, `_` between digits and
 * any Unicode decimal digit. Null where Python raises ValueError.
 */
export function pyInt(text: string): bigint | null {
  const body = asciiNumberText(text);
  if (body === null || !INT_TEXT.test(body)) return null;
  return BigInt(body.replaceAll('_', ''));
}

/**
 * Python `float(text)` of a str: surrounding whitespace, a sign, digits with an optional fraction
 * and exponent (`_` between digits, any Unicode decimal digit), or `inf`/`infinity`/`nan` in any
 * case. Null where Python raises ValueError.
 */
export function pyFloat(text: string): number | null {
  const body = asciiNumberText(text);
  if (body === null) return null;
  if (FLOAT_TEXT.test(body)) return Number(body.replaceAll('_', ''));
  const word = FLOAT_WORD.exec(body);
  if (word === null) return null;
  if (word[2] === undefined) return NaN;
  return word[1] === '-' ? -Infinity : Infinity;
}

// --- numbers ------------------------------------------------------------------------------------

/**
 * Python `repr()` of a float: the shortest round-trip digits (as JavaScript finds them too),
 * written in exponent form when the exponent is below -4 or at least 16, and with `.0` when
 * integral (`5.0`, `1e-05`, `1e+16`, `inf`, `nan`).
 */
export function pyFloatRepr(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const [mantissa = '0', exponentText = '0'] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  const sign = mantissa.startsWith('-') ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length === 1 ? digits : `${digits[0]}.${digits.slice(1)}`;
    return `${sign}${body}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction === '' ? '0' : fraction}`;
}

/** A finite, positive double as the exact fraction numerator / 2^shift. */
function exactBinary(value: number): { numerator: bigint; shift: bigint } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  return exponent >= 0 ? { numerator: mantissa << BigInt(exponent), shift: 0n } : { numerator: mantissa, shift: BigInt(-exponent) };
}

/**
 * A finite, positive double rounded to `digits` significant digits, half to even on its exact
 * binary value as Python's formatting does (JavaScript's toExponential and toFixed round a tie
 * away from zero): the digits and the decimal exponent of the first.
 */
function roundSignificant(value: number, digits: number): { digits: string; exponent: number } {
  const { numerator, shift } = exactBinary(value);
  let exponent = Math.floor(Math.log10(value));
  for (;;) {
    // scaled = value * 10^(digits - 1 - exponent) as the fraction top / bottom.
    const power = digits - 1 - exponent;
    let top = numerator;
    let bottom = 1n << shift;
    if (power >= 0) top *= 10n ** BigInt(power);
    else bottom *= 10n ** BigInt(-power);
    let quotient = top / bottom;
    const twiceRemainder = (top % bottom) * 2n;
    if (twiceRemainder > bottom || (twiceRemainder === bottom && quotient % 2n === 1n)) quotient += 1n;
    const text = quotient.toString();
    // log10 can be one off near a power of ten, and rounding up can carry into a new digit.
    if (text.length > digits) exponent += 1;
    else if (text.length < digits) exponent -= 1;
    else return { digits: text, exponent };
  }
}

/** Python `format(value, "g")` of a float (or an int, which it formats as a float): six significant digits. */
export function pyFormatG(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  if (value === 0) return `${sign}0`;
  const precision = 6;
  const { digits, exponent } = roundSignificant(Math.abs(value), precision);
  const significant = digits.replace(/0+$/, '');
  if (exponent < -4 || exponent >= precision) {
    const mantissa = significant.length === 1 ? significant : `${significant[0]}.${significant.slice(1)}`;
    return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${significant}`;
  const whole = significant.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  const fraction = significant.slice(exponent + 1);
  return `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

// --- shlex.quote --------------------------------------------------------------------------------

/** Python `shlex.quote`: the text as is when it holds only `\w@%+=:,./-` (ASCII), else single-quoted. */
export function shlexQuote(text: string): string {
  if (text === '') return "''";
  if (!/[^\w@%+=:,./-]/.test(text)) return text;
  return `'${text.replace(/'/g, `'"'"'`)}'`;
}

// --- json.dumps ---------------------------------------------------------------------------------

export interface DumpsOptions {
  /** Escape everything outside printable ASCII as `\uXXXX` (Python's default, true). */
  ensureAscii?: boolean;
  /** Item and key separators (Python's default `[', ', ': ']`; with indent `[',', ': ']`). */
  separators?: readonly [string, string];
  /** Indent nested levels by this many spaces, one item a line (Python's `indent=`). */
  indent?: number;
}

// JSON.stringify escapes a string as json.dumps(ensure_ascii=False) does (the short escapes, other
// control characters as lowercase \u00XX), except that it escapes a lone surrogate, which Python
// writes raw. With ensure_ascii, everything from U+007F up is then escaped per UTF-16 unit, as
// Python does (U+007F included, which JSON.stringify leaves raw).
const NOT_PRINTABLE_ASCII = /[\u007f-\uffff]/;
const NOT_PRINTABLE_ASCII_ALL = /[\u007f-\uffff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// json.dumps's own escapes, for the rare string JSON.stringify would write differently.
const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
};

function unicodeEscape(char: string): string {
  return `\\u${hex(char.charCodeAt(0), 4)}`;
}

/**
 * Python's ensure_ascii over JSON text that JSON.stringify wrote: every UTF-16 unit from U+007F up
 * as `\uXXXX` (a lone surrogate is already `\udcXX` from JSON.stringify, as Python writes it).
 * For a caller that has checked its own data prints alike and wants JSON.stringify's speed.
 */
export function toAsciiJson(json: string): string {
  // The usual answer, "nothing to escape", by two scans the engine runs natively (a UTF-8 length
  // equal to the UTF-16 length means every unit is below U+0080; then only U+007F is left to
  // look for): over a document of megabytes, several times faster than the class regex.
  if (Buffer.byteLength(json, 'utf8') === json.length && !json.includes('\x7f')) return json;
  return NOT_PRINTABLE_ASCII.test(json) ? json.replace(NOT_PRINTABLE_ASCII_ALL, unicodeEscape) : json;
}

function dumpsString(text: string, ensureAscii: boolean): string {
  const json = JSON.stringify(text);
  if (ensureAscii) return toAsciiJson(json);
  if (!LONE_SURROGATE.test(text)) return json;
  return `"${text.replace(/["\\\x00-\x1f]/g, (char) => SHORT_ESCAPES[char] ?? unicodeEscape(char))}"`;
}

/**
 * A number as Python writes it: an integral number below 1e21 as a Python int, anything else as a float,
 * and the non-finite values as the bare `NaN`, `Infinity`, `-Infinity` (Python's allow_nan).
 * A caller that needs an integral float (`5.0`) writes `pyFloatRepr` itself.
 */
function dumpsNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  // JSON.stringify writes an integral number below 1e21 in digits, which Python reads as an int.
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return String(value);
  return pyFloatRepr(value);
}

/**
 * Python `json.dumps` of plain data (null, booleans, numbers, strings, arrays, plain objects in
 * key order; `undefined` members are left out as JSON.stringify does). Keys are written in
 * JavaScript's order, which puts integer-like keys first.
 */
export function pyJsonDumps(value: unknown, options: DumpsOptions = {}): string {
  const ensureAscii = options.ensureAscii ?? true;
  const indent = options.indent;
  const [itemSep, keySep] = options.separators ?? (indent === undefined ? [', ', ': '] : [',', ': ']);
  // JSON.stringify lays out exactly as json.dumps does for these separators (`indent` with
  // `,`/`: `, or compact `,`/`:`): use it, natively fast, when every number prints alike.
  const nativeLayout = itemSep === ',' && keySep === (indent === undefined ? ':' : ': ');
  if (nativeLayout) {
    const text = nativeDumps(value, indent);
    if (text !== null) {
      if (ensureAscii) return toAsciiJson(text);
      if (!LONE_SURROGATE.test(text)) return text;
    }
  }
  const write = (item: unknown, depth: number): string => {
    if (item === null || item === undefined) return 'null';
    if (typeof item === 'boolean') return item ? 'true' : 'false';
    if (typeof item === 'number') return dumpsNumber(item);
    if (typeof item === 'string') return dumpsString(item, ensureAscii);
    const parts: string[] = [];
    let open: string;
    let close: string;
    if (Array.isArray(item)) {
      [open, close] = ['[', ']'];
      for (const member of item) parts.push(write(member, depth + 1));
    } else if (typeof item === 'object') {
      [open, close] = ['{', '}'];
      for (const [key, member] of Object.entries(item as Record<string, unknown>)) {
        if (member !== undefined) parts.push(`${dumpsString(key, ensureAscii)}${keySep}${write(member, depth + 1)}`);
      }
    } else {
      return 'null';
    }
    if (parts.length === 0) return open + close;
    if (indent === undefined) return open + parts.join(itemSep) + close;
    const inner = `\n${' '.repeat(indent * (depth + 1))}`;
    return `${open}${inner}${parts.join(itemSep + inner)}\n${' '.repeat(indent * depth)}${close}`;
  };
  return write(value, 0);
}

const NOT_NATIVE = Symbol('not native');

/** Whether JSON.stringify writes the number as dumpsNumber does (plain decimal on both sides). */
function printsAlike(value: number): boolean {
  const size = Math.abs(value);
  if (Number.isInteger(value)) return size < 1e21;
  return size >= 1e-4 && size < 1e16;
}

/** JSON.stringify of plain data, or null when a number (or a non-plain value) would print otherwise. */
function nativeDumps(value: unknown, indent: number | undefined): string | null {
  try {
    return JSON.stringify(
      value,
      (_key, member: unknown) => {
        if (typeof member === 'number' && !printsAlike(member)) throw NOT_NATIVE;
        if (member !== null && typeof member === 'object' && !Array.isArray(member)) {
          const proto = Object.getPrototypeOf(member) as unknown;
          if (proto !== Object.prototype && proto !== null) throw NOT_NATIVE;
        }
        if (typeof member === 'bigint' || typeof member === 'function' || typeof member === 'symbol') throw NOT_NATIVE;
        return member;
      },
      indent,
    ) ?? null;
  } catch (error) {
    if (error === NOT_NATIVE) return null;
    throw error;
  }
}

// --- json.loads ---------------------------------------------------------------------------------

/**
 * Python `json.loads`: JSON plus the bare literals `NaN`, `Infinity` and `-Infinity` that
 * Python writes (a `--timeout inf`, a quota bucket of NaN), which become the JavaScript numbers.
 * Plain JSON takes JSON.parse's fast path. Throws SyntaxError on anything else, as json.loads
 * raises; integers beyond 2^53 lose precision (JavaScript numbers).
 */
export function pyJsonLoads(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    if (!text.includes('NaN') && !text.includes('Infinity')) throw error;
  }
  return new LenientJsonParser(text).document();
}

const NON_FINITE: ReadonlyArray<readonly [string, number]> = [
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
];

/** A recursive-descent parser for JSON with Python's three extra literals. */
class LenientJsonParser {
  #at = 0;

  constructor(private readonly text: string) {}

  document(): unknown {
    const value = this.value();
    this.space();
    if (this.#at !== this.text.length) this.fail('Extra data');
    return value;
  }

  private fail(what: string): never {
    throw new SyntaxError(`${what} at position ${this.#at}`);
  }

  private space(): void {
    while (this.#at < this.text.length && ' \t\n\r'.includes(this.text[this.#at] as string)) this.#at += 1;
  }

  private value(): unknown {
    this.space();
    const char = this.text[this.#at];
    if (char === '{') return this.object();
    if (char === '[') return this.array();
    if (char === '"') return this.string();
    for (const [literal, number] of NON_FINITE) {
      if (this.text.startsWith(literal, this.#at)) {
        this.#at += literal.length;
        return number;
      }
    }
    for (const [literal, constant] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(literal, this.#at)) {
        this.#at += literal.length;
        return constant;
      }
    }
    const match = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
    match.lastIndex = this.#at;
    const found = match.exec(this.text);
    if (found === null || found[0] === '') this.fail('Expecting value');
    this.#at += found[0].length;
    return Number(found[0]);
  }

  private string(): string {
    const match = /"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
    match.lastIndex = this.#at;
    const found = match.exec(this.text);
    if (found === null) this.fail('Invalid string');
    this.#at += found[0].length;
    return JSON.parse(found[0]) as string;
  }

  private array(): unknown[] {
    this.#at += 1;
    const items: unknown[] = [];
    this.space();
    if (this.text[this.#at] === ']') {
      this.#at += 1;
      return items;
    }
    for (;;) {
      items.push(this.value());
      this.space();
      const char = this.text[this.#at];
      this.#at += 1;
      if (char === ']') return items;
      if (char !== ',') this.fail("Expecting ',' delimiter");
    }
  }

  private object(): Record<string, unknown> {
    this.#at += 1;
    const result: Record<string, unknown> = {};
    this.space();
    if (this.text[this.#at] === '}') {
      this.#at += 1;
      return result;
    }
    for (;;) {
      this.space();
      if (this.text[this.#at] !== '"') this.fail('Expecting property name enclosed in double quotes');
      const key = this.string();
      this.space();
      if (this.text[this.#at] !== ':') this.fail("Expecting ':' delimiter");
      this.#at += 1;
      Object.defineProperty(result, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      const char = this.text[this.#at];
      this.#at += 1;
      if (char === '}') return result;
      if (char !== ',') this.fail("Expecting ',' delimiter");
    }
  }
}

// --- expanduser ---------------------------------------------------------------------------------

/** The home directory of a named user from /etc/passwd, or null. */
function homeOfUser(user: string): string | null {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const fields = line.split(':');
      if (fields[0] === user && fields.length >= 7) return fields[5] ?? null;
    }
  } catch {
    // No passwd database: Python leaves the path unchanged too.
  }
  return null;
}

function homeOfCurrentUser(): string | null {
  try {
    return userInfo().homedir;
  } catch {
    return null;
  }
}

/** Python `os.path.expanduser` (POSIX): `~` (HOME, else the passwd entry) and `~user` at the start. */
export function expandUser(path: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (!path.startsWith('~')) return path;
  const slash = path.indexOf('/', 1);
  const end = slash === -1 ? path.length : slash;
  const user = path.slice(1, end);
  const home = user === '' ? (env.HOME ?? homeOfCurrentUser()) : homeOfUser(user);
  if (home === null) return path;
  let homeEnd = home.length;
  while (homeEnd > 0 && home[homeEnd - 1] === '/') homeEnd -= 1;
  return home.slice(0, homeEnd) + path.slice(end) || '/';
}

// --- expandvars ---------------------------------------------------------------------------------

function isWordChar(char: string | undefined): boolean {
  return char !== undefined && /^[A-Za-z0-9_]$/.test(char);
}

/**
 * Python `os.path.expandvars` (POSIX): `$name` (ASCII word characters) and `${name}` are
 * replaced when the variable exists and left as written otherwise; inserted values are not
 * expanded again.
 */
export function expandVars(path: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  if (!path.includes('$')) return path;
  let out = '';
  let i = 0;
  while (i < path.length) {
    const char = path[i] as string;
    if (char !== '$') {
      out += char;
      i += 1;
      continue;
    }
    let name: string | null = null;
    let end = i + 1;
    if (path[end] === '{') {
      const close = path.indexOf('}', end + 1);
      if (close !== -1) {
        name = path.slice(end + 1, close);
        end = close + 1;
      }
    } else {
      while (isWordChar(path[end])) end += 1;
      if (end > i + 1) name = path.slice(i + 1, end);
    }
    if (name === null) {
      out += char;
      i += 1;
      continue;
    }
    // An unknown variable stays as written, and Python resumes after the whole reference.
    out += env[name] ?? path.slice(i, end);
    i = end;
  }
  return out;
}

// --- exception names ----------------------------------------------------------------------------

// The OSError subclass Python raises for each errno (PEP 3151); any other errno is plain OSError.
const OS_ERROR_CLASSES: Readonly<Record<string, string>> = {
  EAGAIN: 'BlockingIOError',
  EALREADY: 'BlockingIOError',
  EWOULDBLOCK: 'BlockingIOError',
  EINPROGRESS: 'BlockingIOError',
  ECHILD: 'ChildProcessError',
  EPIPE: 'BrokenPipeError',
  ESHUTDOWN: 'BrokenPipeError',
  ECONNABORTED: 'ConnectionAbortedError',
  ECONNREFUSED: 'ConnectionRefusedError',
  ECONNRESET: 'ConnectionResetError',
  EEXIST: 'FileExistsError',
  ENOENT: 'FileNotFoundError',
  EINTR: 'InterruptedError',
  EISDIR: 'IsADirectoryError',
  ENOTDIR: 'NotADirectoryError',
  EACCES: 'PermissionError',
  EPERM: 'PermissionError',
  ESRCH: 'ProcessLookupError',
  ETIMEDOUT: 'TimeoutError',
};

// Node's own argument errors, as Python raises them for the same input (a NUL byte in a path is
// a ValueError there, "embedded null byte").
const NODE_ERROR_CLASSES: Readonly<Record<string, string>> = {
  ERR_INVALID_ARG_VALUE: 'ValueError',
  ERR_INVALID_ARG_TYPE: 'TypeError',
  ERR_OUT_OF_RANGE: 'ValueError',
};

/**
 * The Python exception class name for a Node error code: `ENOENT` → `FileNotFoundError`,
 * `EACCES` → `PermissionError`, any other errno name → `OSError`, `ERR_INVALID_ARG_VALUE` →
 * `ValueError`. Anything else (already a class name, or a name of our own such as
 * `NotARegularFile`) is returned unchanged.
 */
export function pyErrorName(code: string): string {
  const known = OS_ERROR_CLASSES[code] ?? NODE_ERROR_CLASSES[code];
  if (known !== undefined) return known;
  return /^E[A-Z0-9]+$/.test(code) ? 'OSError' : code;
}

/** `type(exc).__name__` as Python would have it for a caught error: by its code, else its name. */
export function pyExceptionName(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') {
    const name = pyErrorName(code);
    if (name !== code) return name;
  }
  return error instanceof Error ? error.name : 'Exception';
}

// --- OSError text --------------------------------------------------------------------------------

/**
 * The text Python prints for an OSError: `[Errno 2] No such file or directory: '/p'` (and
 * `'/a' -> '/b'` for two-path calls such as link, each path as repr() writes it), in glibc's
 * strerror words (kit's errno.ts; Node's messages word some differently). Errors without
 * an errno code give their message.
 */
export function pyOsErrorText(error: unknown): string {
  if (!(error instanceof Error) || typeof (error as NodeJS.ErrnoException).code !== 'string') {
    return error instanceof Error ? error.message : String(error);
  }
  const { code = '', errno, path } = error as NodeJS.ErrnoException;
  const number = (osConstants.errno as Record<string, number>)[code] ?? Math.abs(errno ?? 0);
  const text = strerror(code) ?? error.message.replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*$/, '');
  let paths = '';
  if (typeof path === 'string') paths = `: ${pyRepr(path)}`;
  const dest = (error as { dest?: unknown }).dest;
  if (typeof path === 'string' && typeof dest === 'string') paths += ` -> ${pyRepr(dest)}`;
  return `[Errno ${number}] ${text}${paths}`;
}
