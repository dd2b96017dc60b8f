/**
 * The secret scrub applied to a worker's environment (the rules: this package's README).
 *
 * Names are matched with plain substring checks on the upper-cased name: no regular
 * expression ever runs over the (untrusted) environment, so no input can make it slow.
 */
import { compareCodePoints, pyStrip } from '@prun/kit/py';

// Python's sorted() order of str; its home is @prun/kit/py, re-exported for this library's users.
export { compareCodePoints };

/** Name fragments that mark a variable as secret-shaped, anywhere in the upper-cased name. */
export const SECRET_NAME_PARTS: readonly string[] = Object.freeze([
  'KEY',
  'TOKEN',
  'SECRET',
  'PASSWORD',
  'PASSWD',
  'CREDENTIAL',
  'APIKEY',
  'AUTH',
]);

/** Prefixes that mark a variable as secret-shaped. */
export const SECRET_NAME_PREFIXES: readonly string[] = Object.freeze(['AWS_']);

/** Prefixes that are always let through: the Antigravity CLI's own session plumbing lives there. */
export const ALWAYS_KEPT_PREFIXES: readonly string[] = Object.freeze(['ANTIGRAVITY_']);

/** The variable whose comma-separated names are let through the scrub. */
export const KEEP_ENV_VAR = 'PRUN_KEEP_ENV';

/**
 * Parses a `PRUN_KEEP_ENV`-style value: comma-separated names, each stripped and upper-cased,
 * blanks dropped. `undefined` (variable unset) gives an empty list.
 */
export function parseKeepList(value: string | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  const names: string[] = [];
  for (const piece of value.split(',')) {
    const name = pyStrip(piece).toUpperCase();
    if (name !== '' && !names.includes(name)) names.push(name);
  }
  return names;
}

/** True when the name looks like it holds a secret (the drop rule), ignoring the keep rules. */
export function isSecretName(name: string): boolean {
  const upper = name.toUpperCase();
  return (
    SECRET_NAME_PREFIXES.some((prefix) => upper.startsWith(prefix)) ||
    SECRET_NAME_PARTS.some((part) => upper.includes(part))
  );
}

/** True when the scrub rules let the variable through to the worker. */
export function isKeptName(name: string, keep: Iterable<string> = []): boolean {
  return keptByRules(name, upperCasedSet(keep));
}

function upperCasedSet(names: Iterable<string>): Set<string> {
  return new Set(Array.from(names, (name) => name.toUpperCase()));
}

function keptByRules(name: string, upperKeep: ReadonlySet<string>): boolean {
  const upper = name.toUpperCase();
  if (upperKeep.has(upper)) return true;
  if (ALWAYS_KEPT_PREFIXES.some((prefix) => upper.startsWith(prefix))) return true;
  return !isSecretName(name);
}

export interface ScrubOptions {
  /**
   * Names let through the scrub (matched upper-cased). Defaults to the names parsed from the
   * input environment's `PRUN_KEEP_ENV`.
   */
  keep?: Iterable<string> | undefined;
}

export interface ScrubResult {
  /** The variables the worker gets, with their original names and values. */
  env: Record<string, string>;
  /** The dropped names in their original spelling, sorted by code point. Never values. */
  withheld: string[];
}

/** Applies the scrub to an environment. Variables whose value is `undefined` are skipped. */
export function scrubEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: ScrubOptions = {},
): ScrubResult {
  const keep = upperCasedSet(options.keep ?? parseKeepList(env[KEEP_ENV_VAR]));
  const kept: Record<string, string> = {};
  const withheld: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    // defineProperty, because a variable may be named `__proto__`.
    if (keptByRules(name, keep)) Object.defineProperty(kept, name, { value, enumerable: true, writable: true, configurable: true });
    else withheld.push(name);
  }
  withheld.sort(compareCodePoints);
  return { env: kept, withheld };
}

/** The `env-withheld` file body: names joined by `\n` plus a final `\n`; null when none. */
export function formatWithheld(withheld: readonly string[]): string | null {
  return withheld.length === 0 ? null : withheld.join('\n') + '\n';
}
