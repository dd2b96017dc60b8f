import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareCodePoints,
  formatWithheld,
  isKeptName,
  isSecretName,
  parseKeepList,
  scrubEnv,
  SECRET_NAME_PARTS,
} from '../src/index.js';

describe('consequences of the scrub rules', () => {
  it.each([
    'GEMINI_API_KEY',
    'GOOGLE_API_KEY',
    'OPENAI_API_KEY',
    'GH_TOKEN',
    'GITHUB_TOKEN',
    'AWS_REGION',
    'AWS_PROFILE',
    'SSH_AUTH_SOCK',
    'XAUTHORITY',
    'GIT_AUTHOR_NAME',
    'GIT_AUTHOR_EMAIL',
    'KEYBOARD_LAYOUT',
    'MONKEY',
    'OAUTHLIB_INSECURE_TRANSPORT',
    'my_token',
    'aws_session',
    'Db_Password',
    'MY_PASSWD',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'X_SECRET_Y',
    'SOMEAPIKEY',
  ])('drops %s', (name) => {
    const result = scrubEnv({ [name]: 'v', PATH: '/bin' });
    expect(result.withheld).toEqual([name]);
    expect(result.env).toEqual({ PATH: '/bin' });
  });

  it.each(['PATH', 'HOME', 'LANG', 'PRUN_KEEP_ENV', 'ANTIGRAVITY_API_KEY', 'antigravity_token', 'AWSX', 'TERM'])(
    'keeps %s',
    (name) => {
      const result = scrubEnv({ [name]: 'value' });
      expect(result.env).toEqual({ [name]: 'value' });
      expect(result.withheld).toEqual([]);
    },
  );

  it.each(['MY_ANTIGRAVITY_TOKEN', 'X_ANTIGRAVITY_API_KEY', 'NOT_ANTIGRAVITY_SECRET', 'ANTIGRAVITYTOKEN'])(
    'withholds %s: ANTIGRAVITY_ keeps a name only as its prefix',
    (name) => {
      const result = scrubEnv({ [name]: 'v', ANTIGRAVITY_TOKEN: 'kept' });
      expect(result.withheld).toEqual([name]);
      expect(result.env).toEqual({ ANTIGRAVITY_TOKEN: 'kept' });
    },
  );

  it('PRUN_KEEP_ENV names are stripped, upper-cased and blanks dropped', () => {
    const env = {
      PRUN_KEEP_ENV: 'gh_token, ssh_auth_sock ,, ',
      GH_TOKEN: 'a',
      SSH_AUTH_SOCK: 'b',
      GITHUB_TOKEN: 'c',
    };
    const result = scrubEnv(env);
    expect(result.env).toEqual({ PRUN_KEEP_ENV: env.PRUN_KEEP_ENV, GH_TOKEN: 'a', SSH_AUTH_SOCK: 'b' });
    expect(result.withheld).toEqual(['GITHUB_TOKEN']);
  });

  it('a keep name matches the variable case-insensitively', () => {
    expect(scrubEnv({ my_token: 'x', PRUN_KEEP_ENV: 'MY_TOKEN' }).withheld).toEqual([]);
  });

  it('an explicit keep list replaces PRUN_KEEP_ENV', () => {
    const result = scrubEnv({ PRUN_KEEP_ENV: 'GH_TOKEN', GH_TOKEN: 'a', NPM_TOKEN: 'b' }, { keep: ['npm_token'] });
    expect(result.withheld).toEqual(['GH_TOKEN']);
    expect(result.env).toHaveProperty('NPM_TOKEN', 'b');
  });

  it('withheld names keep their spelling and are sorted by code point', () => {
    const env = { b_token: '1', A_KEY: '2', a_key: '3', Z_AUTH: '4', '\u{1F600}_KEY': '5', '\uFF21_KEY': '6' };
    // UTF-16 order would put the astral name before U+FF21; code-point order puts it last.
    expect(scrubEnv(env).withheld).toEqual(['A_KEY', 'Z_AUTH', 'a_key', 'b_token', '\uFF21_KEY', '\u{1F600}_KEY']);
  });

  it('skips undefined values and never changes kept values', () => {
    const result = scrubEnv({ GONE: undefined, KEPT: ' spaced  value\n' });
    expect(result.env).toEqual({ KEPT: ' spaced  value\n' });
  });

  it('parseKeepList follows Python strip, not JS trim', () => {
    expect(parseKeepList(undefined)).toEqual([]);
    expect(parseKeepList('')).toEqual([]);
    expect(parseKeepList('\x1fa_b\x85, c ')).toEqual(['A_B', 'C']);
    // U+FEFF is not Python whitespace, so it stays part of the name.
    expect(parseKeepList('\uFEFFx')).toEqual(['\uFEFFX']);
  });

  it('isSecretName ignores keep rules; isKeptName applies them', () => {
    expect(isSecretName('ANTIGRAVITY_API_KEY')).toBe(true);
    expect(isKeptName('ANTIGRAVITY_API_KEY')).toBe(true);
    expect(isKeptName('GH_TOKEN', ['gh_token'])).toBe(true);
    expect(isKeptName('GH_TOKEN')).toBe(false);
  });

  it('formatWithheld gives the env-withheld body or null', () => {
    expect(formatWithheld([])).toBeNull();
    expect(formatWithheld(['A_KEY', 'B_TOKEN'])).toBe('A_KEY\nB_TOKEN\n');
  });

  it('compareCodePoints orders like Python', () => {
    expect(['b', 'a', 'B', 'ab', 'a'].sort(compareCodePoints)).toEqual(['B', 'a', 'a', 'ab', 'b']);
  });
});

describe('property: no secret-shaped name survives unless kept', () => {
  const fragment = fc.constantFrom(...SECRET_NAME_PARTS, 'AWS_');
  const nameChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_');
  const filler = fc.string({ unit: nameChar, maxLength: 8 });
  // Mixed case of an arbitrary string, so fragments appear as "tOkEn" as well as "TOKEN".
  const mixCase = (text: string, mask: boolean[]) =>
    Array.from(text, (char, i) => (mask[i % Math.max(mask.length, 1)] ? char.toLowerCase() : char.toUpperCase())).join('');
  const embedded = fc
    .tuple(filler, fragment, filler, fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }))
    .map(([head, part, tail, mask]) => mixCase(part === 'AWS_' ? part + tail : head + part + tail, mask));
  const antigravity = fc
    .tuple(embedded, fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }))
    .map(([rest, mask]) => mixCase('ANTIGRAVITY_', mask) + rest);
  const anyName = fc.oneof(
    embedded,
    antigravity,
    filler.filter((name) => name !== ''),
    fc.string({ minLength: 1, maxLength: 12 }),
  );

  const secretShaped = (name: string) => {
    const upper = name.toUpperCase();
    return upper.startsWith('AWS_') || SECRET_NAME_PARTS.some((part) => upper.includes(part));
  };

  it('holds over thousands of random environments', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(anyName, { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (names, keepPicks) => {
          const keep = keepPicks.map((pick) => (names[pick % names.length] as string).toLowerCase());
          const env = Object.fromEntries(names.map((name) => [name, 'value-of-' + name]));
          const result = scrubEnv(env, { keep });
          const keepUpper = new Set(keep.map((name) => name.toUpperCase()));
          for (const name of Object.keys(result.env)) {
            const upper = name.toUpperCase();
            if (secretShaped(name)) {
              expect(keepUpper.has(upper) || upper.startsWith('ANTIGRAVITY_')).toBe(true);
            }
            expect(result.env[name]).toBe(env[name]);
          }
          // Every name lands on exactly one side.
          expect(Object.keys(result.env).length + result.withheld.length).toBe(names.length);
          for (const name of result.withheld) {
            const upper = name.toUpperCase();
            expect(secretShaped(name)).toBe(true);
            expect(keepUpper.has(upper) || upper.startsWith('ANTIGRAVITY_')).toBe(false);
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('odd names', () => {
  it('a variable named __proto__ is an ordinary entry', () => {
    const env = Object.fromEntries([['__proto__', 'x'], ['A', 'b']]) as Record<string, string>;
    const result = scrubEnv(env);
    expect(Object.keys(result.env)).toEqual(['__proto__', 'A']);
    expect(Object.getPrototypeOf(result.env)).toBe(Object.prototype);
  });
});
