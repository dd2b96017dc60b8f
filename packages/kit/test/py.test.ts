// Each Python-compatibility helper against python3 itself, over generated inputs. All cases go
// to one python3 process, so the whole file costs one start-up.
import { spawnSync } from 'node:child_process';
import { closeSync, linkSync, mkdirSync, mkdtempSync, openSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { which } from '@prun/kit/fs';
import {
  PY_LINE_BREAK,
  PY_LINE_BREAK_CODE_POINTS,
  PY_WHITESPACE_CODE_POINTS,
  compareCodePoints,
  isPyWhitespace,
  expandUser,
  expandVars,
  isPyPrintable,
  pyErrorName,
  pyExceptionName,
  pyFloat,
  pyFloatRepr,
  pyFormatG,
  pyInt,
  pyJsonDumps,
  pyJsonLoads,
  pyListRepr,
  pyOsErrorText,
  pyRepr,
  pySplit,
  pyStr,
  pyRstrip,
  pyStrip,
  splitLines,
  shlexQuote,
  splitUniversalLines,
  toAsciiJson,
} from '@prun/kit/py';

const python = which('python3');
const skipNote = python === null ? ' (skipped: python3 not on PATH)' : '';
const oracle = fileURLToPath(new URL('./fixtures/python-oracle.py', import.meta.url));
const seed = Number(process.env.KIT_PY_SEED ?? Date.now() % 2 ** 31);
const RUNS = 400;

// Characters where JavaScript and Python most often part ways.
const INTERESTING = [
  ...'\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000',
  '\r\n',
  ...`'"\\\x00\x07\x1b\x7f\x80\x9f\xad\u00e9\u200b\u200e\ufeff\ufffd\ue000\u0378`,
  '\ud800',
  '\udfff',
  '\u{1f600}',
  '\u{10ffff}',
  '\u{e0001}',
  'a',
  'Z',
  '~',
  '/',
];
const char = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...INTERESTING) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map((code) => String.fromCodePoint(code)) },
  { weight: 1, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) },
);
const text = fc.array(char, { maxLength: 12 }).map((chars) => chars.join(''));

const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0.1, 1e-5, 1e-4, 1e15, 1e16, 1.5e16, 123456789012345680000, 1e21, 5e-324, NaN, Infinity, -Infinity),
).map((n) => (Object.is(n, -0) ? 0 : n)); // JSON has no -0 to carry to Python
const value = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    number,
    text,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;

// Text that int() and float() might take: digits (ASCII, Arabic-Indic, fullwidth, mathematical),
// signs, points, exponents, underscores, the inf/nan words, and the edge of their whitespace set.
const NUMBER_PIECES = [
  ...'0123456789', '_', '__', '.', 'e', 'E', '+', '-', ' ', '\t', '\n', '\x0b', '\x1c', '\x1f', '\x85', '\xa0',
  '\u2028', '\u3000', '\ufeff', '\x7f', '\u0660', '\u0669', '\uff11', '\u{1d7ce}', '\u{1d7ff}', '\u00b2', 'inf',
  'INFINITY', 'nan', 'x', 'i', 'n',
];
const numberText = fc.oneof(
  fc.array(fc.constantFrom(...NUMBER_PIECES), { maxLength: 8 }).map((pieces) => pieces.join('')),
  fc.tuple(fc.constantFrom('', ' ', '\x85', '\x1c', '\ufeff', '\u3000'), fc.double({ noNaN: false }), fc.constantFrom('', '\n', '\xa0', '\x1f'))
    .map(([before, n, after]) => before + String(n) + after),
  fc
    .tuple(
      fc.constantFrom('', ' ', '\x85', '\x1c', '\ufeff', '\t'),
      fc.constantFrom('', '+', '-'),
      fc.array(fc.constantFrom('0', '7', '\u0663', '\uff19', '\u{1d7d8}', '_'), { minLength: 1, maxLength: 6 }),
      fc.constantFrom('', '', '.', '.5', 'e3', 'e_1', ' ', '\u3000', '\x1e'),
    )
    .map(([before, sign, digits, after]) => before + sign + digits.join('') + after),
  text,
);

const HOMES = [null, '/home/u', '/home/u/', '/', '', '//'];
const PATHS = ['~', '~/', '~/a/b', '~root', '~root/x', '~no-such-user-kit/x', 'a~', '/~', '~//x', ''];

interface Answers {
  strip: string[];
  rstrip: string[];
  split: string[][];
  splitlines: string[][];
  repr: string[];
  listrepr: Array<[string, string[]]>;
  universal: string[][];
  int: Array<string | null>;
  float: Array<string | null>;
  numberunassigned: string[][];
  unassigned: string[][];
  sorted: string[][];
  dumpsstr: string[];
  formatg: string[];
  shlex: string[];
  dumps: string[][];
  str: Array<[string, string[]]>;
  expanduser: string[];
  expandvars: string[];
  oserror: Array<string | null>;
  errno: Array<string | null>;
}

const strings = fc.sample(text, { numRuns: RUNS, seed });
const values = fc.sample(value, { numRuns: RUNS, seed });
// Floats for format(g): any double, and ties at the sixth digit, where rounding half to even and
// JavaScript's half away from zero part (123456.5, 1234565, 0.125 at fewer digits).
const floats = [
  // JSON has no -0 to carry to Python.
  ...fc.sample(fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (Object.is(n, -0) ? 0 : n)), { numRuns: RUNS, seed }),
  ...fc.sample(fc.integer({ min: 1, max: 9_999_999 }).map((n) => n + 0.5), { numRuns: RUNS / 4, seed }),
  ...fc.sample(fc.integer({ min: 1_000_000, max: 99_999_999 }).map((n) => n * 10 + 5), { numRuns: RUNS / 4, seed }),
  123456.5, 1234565, 2.5e-5, 0.00001, 1e-5, 999999.5, 9999995, 1e16, 5e-324, 1.7976931348623157e308, 100000, 1e6, 0,
];
const numbers = fc.sample(numberText, { numRuns: RUNS * 2, seed });
const lists = fc.sample(fc.array(text, { maxLength: 4 }), { numRuns: RUNS, seed });
// Lists to sort: shared prefixes, so that the first difference falls after equal surrogates too.
const sortLists = fc.sample(
  fc.array(fc.tuple(fc.constantFrom('', 'a', '\ud83d', 'prun-'), text).map(([prefix, rest]) => prefix + rest), { maxLength: 8 }),
  { numRuns: RUNS, seed },
);
const errnos = Object.keys(osConstants.errno);
// $name, ${name}, $ alone, unclosed braces, non-ASCII word characters, and values holding $.
const VAR_PIECES = ['$', '$A', '${A}', '$B_1', '${B_1}', '${', '}', '$$', '${}', '$é', 'x', '/', '$A_', '${A', '$Ω', '${no such}', '$_'];
const varCases = fc.sample(
  fc.record({
    path: fc.array(fc.constantFrom(...VAR_PIECES), { maxLength: 6 }).map((pieces) => pieces.join('')),
    env: fc.dictionary(fc.constantFrom('A', 'B_1', 'A_', '_', 'é', 'no such'), fc.constantFrom('', 'v', '$A', '${B_1}', 'é/')),
  }),
  { numRuns: RUNS, seed },
);
// Failing calls, the same in Node and Python: each OSError's text, paths quoted as repr() does.
const scratch = mkdtempSync(join(tmpdir(), 'kit-py-oserror-'));
mkdirSync(join(scratch, 'full'));
writeFileSync(join(scratch, 'full', 'file'), '');
const OS_ERRORS: ReadonlyArray<readonly [string, string[]]> = [
  ['open', [join(scratch, 'missing')]],
  ['open', [join(scratch, "it's missing")]],
  ['open', [join(scratch, 'tab\there\x85')]],
  ['open', [join(scratch, 'full', 'file', 'under')]],
  ['openw', [join(scratch, 'full')]],
  ['mkdir', [join(scratch, 'full')]],
  ['link', [join(scratch, 'full', 'file'), join(scratch, 'full')]],
  ['rmdir', [join(scratch, 'full')]],
];
const NODE_CALLS: Record<string, (args: string[]) => void> = {
  open: ([path]) => closeSync(openSync(path as string, 'r')),
  openw: ([path]) => closeSync(openSync(path as string, 'w')),
  mkdir: ([path]) => mkdirSync(path as string),
  link: ([from, to]) => linkSync(from as string, to as string),
  rmdir: ([path]) => rmdirSync(path as string),
};
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const homeCases = HOMES.flatMap((home) => PATHS.map((path) => ({ home, path })));
let answers: Answers;

function transport(item: unknown): string {
  return JSON.stringify(item, (_key, member: unknown) =>
    typeof member === 'number' && !Number.isFinite(member) ? { __nonfinite__: String(member).replace('Infinity', 'inf') } : member,
  );
}

beforeAll(() => {
  if (python === null) return;
  const result = spawnSync(python, [oracle], {
    input: transport({ strings, lists, sortlists: sortLists, floats, numbers, values, expanduser: homeCases, expandvars: varCases, oserrors: OS_ERRORS, errnos }),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`python3 failed: ${result.stderr}`);
  answers = JSON.parse(result.stdout) as Answers;
});

/** Compare case by case, so a failure names the input (and the seed that rebuilds it). */
function each<T>(inputs: readonly T[], expected: readonly unknown[], actual: (input: T) => unknown): void {
  inputs.forEach((input, index) => {
    expect(actual(input), `seed ${seed}, input ${JSON.stringify(input)}`).toEqual(expected[index]);
  });
}

describe('the code point lists byte scanners use', () => {
  test('PY_WHITESPACE_CODE_POINTS and PY_LINE_BREAK_CODE_POINTS are exactly what isPyWhitespace and PY_LINE_BREAK match', () => {
    const whitespace = new Set(PY_WHITESPACE_CODE_POINTS);
    const breaks = new Set(PY_LINE_BREAK_CODE_POINTS);
    for (let code = 0; code <= 0x10ffff; code += code < 0x10000 ? 1 : 0x3f) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const char = String.fromCodePoint(code);
      expect(isPyWhitespace(char) ? code : -1).toBe(whitespace.has(code) ? code : -1);
      expect(PY_LINE_BREAK.test(char) ? code : -1).toBe(breaks.has(code) ? code : -1);
    }
  });
});

describe.skipIf(python === null)(`@prun/kit/py against python3${skipNote}`, () => {
  test('pyStrip is str.strip()', () => each(strings, answers.strip, pyStrip));
  test('pyRstrip is str.rstrip()', () => each(strings, answers.rstrip, pyRstrip));
  test('pySplit is str.split()', () => each(strings, answers.split, pySplit));
  test('splitLines is str.splitlines()', () => each(strings, answers.splitlines, splitLines));

  test('splitUniversalLines is a text-mode read: io.StringIO(s, newline=None) line by line', () => {
    each(strings, answers.universal, splitUniversalLines);
    expect(splitUniversalLines('a\r\nb\rc\nd\x85e\u2028f\x0bg\r')).toEqual(['a', 'b', 'c', 'd\x85e\u2028f\x0bg']);
  });

  test('pyRepr is repr(str), NEL, NBSP, ZWSP and U+007F escaped as Python does', () => {
    let compared = 0;
    strings.forEach((input, index) => {
      // A character newer than this Python's Unicode tables is escaped there, printable here.
      const unknownToPython = (answers.unassigned[index] ?? []).some((c) => isPyPrintable(c));
      if (unknownToPython) return;
      compared += 1;
      expect(pyRepr(input), `seed ${seed}, input ${JSON.stringify(input)}`).toBe(answers.repr[index]);
    });
    expect(compared).toBeGreaterThan(RUNS / 2);
    expect(pyRepr('\x85\xa0\u200b\x7f')).toBe("'\\x85\\xa0\\u200b\\x7f'");
  });

  test('pyListRepr is repr(list of str)', () => {
    let compared = 0;
    lists.forEach((input, index) => {
      const [expected, unassigned] = answers.listrepr[index] as [string, string[]];
      if (unassigned.some((c) => isPyPrintable(c))) return;
      compared += 1;
      expect(pyListRepr(input), `seed ${seed}, input ${JSON.stringify(input)}`).toBe(expected);
    });
    expect(compared).toBeGreaterThan(RUNS / 2);
    expect(pyListRepr(['a\x85b', '\xa0', '\u200b', "it's"])).toBe(`['a\\x85b', '\\xa0', '\\u200b', "it's"]`);
    expect(pyListRepr([])).toBe('[]');
  });

  test('pyInt is int(str) and pyFloat is float(str)', () => {
    numbers.forEach((input, index) => {
      // A digit newer than this Python's Unicode tables is a digit here and refused there.
      if ((answers.numberunassigned[index] ?? []).some((c) => /\p{Nd}/u.test(c))) return;
      const where = `seed ${seed}, input ${JSON.stringify(input)}`;
      const int = pyInt(input);
      expect(int === null ? null : String(int), where).toBe(answers.int[index]);
      const float = pyFloat(input);
      expect(float === null ? null : pyFloatRepr(float), where).toBe(answers.float[index]);
    });
    expect(answers.int.filter((answer) => answer !== null).length).toBeGreaterThan(RUNS / 10);
    expect(answers.float.filter((answer) => answer !== null).length).toBeGreaterThan(RUNS / 5);
    // python3 strips less than str.strip() here: \x1c-\x1f (and U+FEFF) make the text invalid.
    expect(['1_0', ' +7\xa0', '1__0', '_1', '1.0', '\x1c1', '\ufeff1', '\u0663'].map(pyInt)).toEqual([10n, 7n, null, null, null, null, null, 3n]);
    expect(['\ufeff1', '1\x85', '\u0661\u0662', '1\x1c', '1_0.5', '1._5', '.5', '1.e5', '-iNfinity', '+nan', 'in_f'].map(pyFloat)).toEqual([
      null, 1, 12, null, 10.5, null, 0.5, 100000, -Infinity, NaN, null,
    ]);
  });

  test('compareCodePoints orders str as sorted() does (code points, lone surrogates by value)', () => {
    each(sortLists, answers.sorted, (list) => [...list].sort(compareCodePoints));
    // JavaScript's own sort puts U+FFFF after an astral character; Python puts it before.
    expect(['\u{1f600}', '\uffff'].sort()).toEqual(['\u{1f600}', '\uffff']);
    expect(['\u{1f600}', '\uffff', '\ud800', 'B', 'a'].sort(compareCodePoints)).toEqual(['B', 'a', '\ud800', '\uffff', '\u{1f600}']);
  });

  test('pyStr is str() of what json.loads gives', () => {
    let compared = 0;
    values.forEach((input, index) => {
      const [expected, unassigned] = answers.str[index] as [string, string[]];
      if (unassigned.some((c) => isPyPrintable(c))) return;
      compared += 1;
      expect(pyStr(input), `seed ${seed}, input ${transport(input)}`).toBe(expected);
    });
    expect(compared).toBeGreaterThan(RUNS / 2);
    expect([null, true, 3, 0.5, 1e-7, 1e21, NaN, -Infinity, 'it\'s', ['a', null], { k: [false] }].map(pyStr)).toEqual([
      'None', 'True', '3', '0.5', '1e-07', '1e+21', 'nan', '-inf', "it's", "['a', None]", "{'k': [False]}",
    ]);
  });

  test("toAsciiJson over JSON.stringify's text is json.dumps with ensure_ascii", () => {
    each(strings, answers.dumpsstr, (input) => toAsciiJson(JSON.stringify(input)));
    expect(toAsciiJson('"\x7f\u00e9\ud83d\ude00"')).toBe('"\\u007f\\u00e9\\ud83d\\ude00"');
    expect(toAsciiJson('"plain"')).toBe('"plain"');
    // Each escape alone in otherwise plain text: the "nothing to escape" shortcut must not miss
    // U+007F (plain ASCII by UTF-8 length), a Latin-1 letter or a lone surrogate.
    const plain = 'x'.repeat(4096);
    expect(toAsciiJson(`"${plain}\x7f"`)).toBe(`"${plain}\\u007f"`);
    expect(toAsciiJson(`"${plain}\u00e9"`)).toBe(`"${plain}\\u00e9"`);
    expect(toAsciiJson(`"\udc80${plain}"`)).toBe(`"\\udc80${plain}"`);
  });

  test('pyFormatG is format(float, "g"), ties rounded half to even', () => {
    each(floats, answers.formatg, pyFormatG);
    expect([123456.5, 1234565, 5, 0.5, 3600, 1234567, 0.00001, -0].map(pyFormatG)).toEqual([
      '123456', '1.23456e+06', '5', '0.5', '3600', '1.23457e+06', '1e-05', '-0',
    ]);
  });

  test('shlexQuote is shlex.quote', () => {
    each(strings, answers.shlex, shlexQuote);
    expect(['', 'a/b-c_d.e', "it's", 'é'].map(shlexQuote)).toEqual(["''", 'a/b-c_d.e', `'it'"'"'s'`, "'é'"]);
  });

  test('pyJsonDumps is json.dumps with its defaults, ensure_ascii=False, compact separators and indent=2', () => {
    values.forEach((input, index) => {
      const [plain, unicode, compact, indented] = answers.dumps[index] as string[];
      const where = `seed ${seed}, input ${transport(input)}`;
      expect(pyJsonDumps(input), where).toBe(plain);
      expect(pyJsonDumps(input, { ensureAscii: false }), where).toBe(unicode);
      expect(pyJsonDumps(input, { separators: [',', ':'] }), where).toBe(compact);
      expect(pyJsonDumps(input, { indent: 2 }), where).toBe(indented);
    });
    expect(pyJsonDumps('\x7f')).toBe('"\\u007f"');
  });

  test('pyJsonLoads reads what json.dumps writes, bare NaN and Infinity included', () => {
    values.forEach((input, index) => {
      const [plain, , , indented] = answers.dumps[index] as string[];
      expect(pyJsonLoads(plain as string), `seed ${seed}, text ${plain}`).toEqual(input);
      expect(pyJsonLoads(indented as string), `seed ${seed}, text ${indented}`).toEqual(input);
    });
  });

  test("pyErrorName gives the OSError subclass Python raises for each of Node's errno names", () => {
    errnos.forEach((name, index) => {
      const expected = answers.errno[index];
      if (expected !== null) expect(pyErrorName(name), name).toBe(expected);
    });
  });

  test('expandVars is os.path.expandvars', () => {
    each(varCases, answers.expandvars, (input) => expandVars(input.path, input.env));
    expect(expandVars('$A/${A}/$B/${', { A: '$B', B: 'b' })).toBe('$B/$B/b/${');
  });

  test("pyOsErrorText is str() of the OSError Python raises for the same call", () => {
    each(OS_ERRORS, answers.oserror, ([op, args]) => {
      try {
        (NODE_CALLS[op] as (a: string[]) => void)(args);
        return null;
      } catch (error) {
        return pyOsErrorText(error);
      }
    });
    expect(answers.oserror.every((text) => text !== null)).toBe(true);
  });

  test('expandUser is os.path.expanduser', () => {
    homeCases.forEach((input, index) => {
      const env = input.home === null ? {} : { HOME: input.home };
      expect(expandUser(input.path, env), JSON.stringify(input)).toBe(answers.expanduser[index]);
    });
  });
});

describe('@prun/kit/py without python3', () => {
  test('pyErrorName and pyExceptionName give the class Python raises', () => {
    expect(['ENOENT', 'EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'ELOOP', 'EIO', 'ERR_INVALID_ARG_VALUE', 'NotARegularFile', 'EntryTooLarge'].map(pyErrorName)).toEqual([
      'FileNotFoundError',
      'PermissionError',
      'PermissionError',
      'NotADirectoryError',
      'IsADirectoryError',
      'OSError',
      'OSError',
      'ValueError',
      'NotARegularFile',
      'EntryTooLarge',
    ]);
    expect(pyExceptionName(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('FileNotFoundError');
    expect(pyExceptionName(new TypeError('x'))).toBe('TypeError');
    expect(pyExceptionName(Object.assign(new Error('x'), { code: 'ERR_SOMETHING' }))).toBe('Error');
    expect(pyExceptionName('thrown string')).toBe('Exception');
  });

  test('pyFloatRepr writes floats as repr(float) does', () => {
    expect([5, 0.1, 1e-5, 1e16, 1.5e-7, 123.456, -0, NaN, Infinity].map(pyFloatRepr)).toEqual([
      '5.0',
      '0.1',
      '1e-05',
      '1e+16',
      '1.5e-07',
      '123.456',
      '-0.0',
      'nan',
      'inf',
    ]);
  });

  test('pyJsonLoads refuses what json.loads refuses', () => {
    for (const bad of ['', 'nan', '[NaN,]', '{"a" NaN}', '-NaN', '[1] x', 'Infinit']) {
      expect(() => pyJsonLoads(bad), bad).toThrow(SyntaxError);
    }
    expect(pyJsonLoads('{"__proto__": NaN}')).toEqual(JSON.parse('{"__proto__": null}') && { ['__proto__']: NaN });
    expect(pyJsonLoads('{"s": "NaN", "n": -Infinity}')).toEqual({ s: 'NaN', n: -Infinity });
  });
});
