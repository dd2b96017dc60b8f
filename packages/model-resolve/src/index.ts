/**
 * Model-naming facts for the Antigravity CLI (this package's README, "How it works", has each rule): the default
 * and second templates, pools, listing parsing, family resolution, effort, and the preflight
 * decision that turns a routed model plus an `agy models` listing into the model that runs.
 * Everything here is a pure function over plain data except `locateAgy`, which reads the
 * file system.
 */
import { realpathSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { isRegularFile, which } from '@prun/kit/fs';
import { expandUser, expandVars, pyRepr, pySplit, pyStrip, splitLines } from '@prun/kit/py';

export const DEFAULT_MODEL = 'gemini-3.8-flash-high';
export const SECOND_MODEL = 'claude-sonnet-5-5-high';
export const DEFAULT_EFFORT = 'high';
/** Words that may end a slug as its tier (family resolution). */
export const TIER_WORDS: readonly string[] = Object.freeze(['low', 'medium', 'high', 'xhigh', 'max', 'thinking']);
/** Tier words that an absent `ANTIGRAVITY_DISPATCH_EFFORT` lets the slug pass on as effort. */
export const EFFORT_TIERS: readonly string[] = Object.freeze(['low', 'medium', 'high', 'max']);
export const GEMINI_PREFIXES: readonly string[] = Object.freeze(['gemini-']);
export const SECOND_PREFIXES: readonly string[] = Object.freeze(['claude-', 'gpt-']);
export const EFFORT_ENV_VAR = 'ANTIGRAVITY_DISPATCH_EFFORT';
export const BIN_ENV_VAR = 'ANTIGRAVITY_BIN';
export const DEFAULT_BIN = 'agy';

export type ModelPool = 'gemini' | 'second';

export { pyStrip };

/**
 * The preflight's listing parse: the first whitespace-separated token of every non-blank stdout line, in
 * listing order. Lines and tokens split as Python's `splitlines()` and `split()` do.
 */
export function parseListing(text: string): string[] {
  const slugs: string[] = [];
  for (const line of splitLines(text)) {
    const first = pySplit(line)[0];
    if (first !== undefined) slugs.push(first);
  }
  return slugs;
}

/** The pool a slug is metered in, by its stripped, lower-cased name; null when unknown. */
export function modelPool(slug: string): ModelPool | null {
  const name = pyStrip(slug).toLowerCase();
  if (GEMINI_PREFIXES.some((prefix) => name.startsWith(prefix))) return 'gemini';
  if (SECOND_PREFIXES.some((prefix) => name.startsWith(prefix))) return 'second';
  return null;
}

/** Agy rejects `--effort` for Claude and GPT slugs, so only other pools get the flag. */
export function needsEffortFlag(slug: string): boolean {
  return modelPool(slug) !== 'second';
}

/**
 * The effort: `ANTIGRAVITY_DISPATCH_EFFORT` stripped when the variable exists; otherwise the final
 * slug's last `-` segment when it is low/medium/high/max; otherwise `high`.
 */
export function effortFor(slug: string, env: Readonly<Record<string, string | undefined>>): string {
  const explicit = env[EFFORT_ENV_VAR];
  if (explicit !== undefined) return pyStrip(explicit);
  const lastSegment = slug.slice(slug.lastIndexOf('-') + 1);
  return EFFORT_TIERS.includes(lastSegment) ? lastSegment : DEFAULT_EFFORT;
}

// --- newest_in_family (family resolution) ------------------------------------------------------------

/** A slug's parts as family resolution reads them (prefix, version, suffix words, tier); null when the slug does not have that shape. */
export interface ParsedTemplate {
  prefix: string;
  version: string;
  suffix: string;
  /** The trailing tier word, or null when the suffix does not end in one. */
  tier: string | null;
  /** The suffix words left once the tier is removed. */
  nameWords: string[];
}

// None of the groups can match the same text two ways, so this cannot backtrack badly.
const TEMPLATE_PATTERN = /^([a-z]+(?:-[a-z]+)*-)(\d+(?:[.-]\d+)*)((?:-[a-z][a-z0-9]*)*)$/;

export function parseTemplate(template: string): ParsedTemplate | null {
  const match = TEMPLATE_PATTERN.exec(template);
  if (match === null) return null;
  const [, prefix = '', version = '', suffix = ''] = match;
  const words = suffix.split('-').slice(1);
  const last = words[words.length - 1];
  const tier = last !== undefined && TIER_WORDS.includes(last) ? last : null;
  const nameWords = tier === null ? words : words.slice(0, -1);
  return { prefix, version, suffix, tier, nameWords };
}

interface Candidate {
  slug: string;
  version: string[];
  tier: string | null;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
}

/** Integer strings compared by value, without a size limit. */
function compareIntegerStrings(a: string, b: string): number {
  const left = a.replace(/^0+(?=\d)/, '');
  const right = b.replace(/^0+(?=\d)/, '');
  if (left.length !== right.length) return left.length - right.length;
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Python tuple order over integer parts: (3,10) > (3,9), (3,8,0) > (3,8). */
export function compareVersions(a: readonly string[], b: readonly string[]): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const diff = compareIntegerStrings(a[i] as string, b[i] as string);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
}

/** Splits a version such as `3.8` or `5-5` into its integer parts. */
export function versionParts(version: string): string[] {
  return version.split(/[.-]/);
}

function familyCandidates(parsed: ParsedTemplate, listing: readonly string[]): Candidate[] {
  const nameSuffix = parsed.nameWords.map((word) => '-' + word).join('');
  const tiers = TIER_WORDS.map(escapeRegExp).join('|');
  const pattern = new RegExp(
    '^' + escapeRegExp(parsed.prefix) + '(\\d+(?:[.-]\\d+)*)' + escapeRegExp(nameSuffix) + '(?:-(' + tiers + '))?$',
  );
  const candidates: Candidate[] = [];
  for (const slug of listing) {
    const match = pattern.exec(slug);
    if (match === null) continue;
    candidates.push({ slug, version: versionParts(match[1] ?? ''), tier: match[2] ?? null });
  }
  return candidates;
}

function newestOf(members: readonly Candidate[], template: string | null): string {
  let best = members[0] as Candidate;
  for (const member of members) if (compareVersions(member.version, best.version) > 0) best = member;
  const newest = members.filter((member) => compareVersions(member.version, best.version) === 0);
  if (template !== null && newest.some((member) => member.slug === template)) return template;
  return (newest[0] as Candidate).slug;
}

/**
 * Family resolution: the newest listed member of the template's family, tier first (the template's tier,
 * or `high` when it has none, then `high`, then untiered), then the highest version; the
 * template itself wins a version tie. Returns the template unchanged when it does not parse
 * or nothing in the listing belongs to its family.
 */
export function newestInFamily(template: string, listing: readonly string[]): string {
  const parsed = parseTemplate(template);
  if (parsed === null) return template;
  const candidates = familyCandidates(parsed, listing);
  if (candidates.length === 0) return template;
  for (const tier of [parsed.tier ?? 'high', 'high', null]) {
    const members = candidates.filter((candidate) => candidate.tier === tier);
    if (members.length > 0) return newestOf(members, template);
  }
  return newestOf(candidates, null);
}

// --- the preflight decision -----------------------------------------------------------------

/**
 * The preflight decision: only the two templates float, and only when the caller did not name that very model.
 * `named` is `ANTIGRAVITY_DISPATCH_MODEL` (it is stripped here; unset counts as "").
 */
export function allowResolution(routed: string, named: string | null | undefined): boolean {
  const namedModel = named === null || named === undefined ? '' : pyStrip(named);
  return (routed === DEFAULT_MODEL || routed === SECOND_MODEL) && routed !== namedModel;
}

/** The preflight decision: an unlisted Claude template may fall back to the Gemini family; nothing else does. */
export function fallbackModelFor(routed: string): string | null {
  return routed === SECOND_MODEL ? DEFAULT_MODEL : null;
}

export type ModelEventKind = 'MODEL-RESOLVE' | 'MODEL-FALLBACK';
export type ModelEventReason = 'newest-in-family' | 'template-unlisted';

export interface ModelEvent {
  kind: ModelEventKind;
  from: string;
  to: string;
  reason: ModelEventReason;
  /** The exact diagnostic line without the `dispatch-task-agy: ` prefix and without `\n`. */
  line: string;
}

function modelEvent(kind: ModelEventKind, from: string, to: string): ModelEvent {
  const reason: ModelEventReason = kind === 'MODEL-RESOLVE' ? 'newest-in-family' : 'template-unlisted';
  return { kind, from, to, reason, line: `${kind} from=${from} to=${to} reason=${reason}` };
}

/** `MODEL-RESOLVE from=<from> to=<to> reason=newest-in-family` */
export function modelResolveLine(from: string, to: string): string {
  return modelEvent('MODEL-RESOLVE', from, to).line;
}

/** `MODEL-FALLBACK from=<from> to=<to> reason=template-unlisted` */
export function modelFallbackLine(from: string, to: string): string {
  return modelEvent('MODEL-FALLBACK', from, to).line;
}

export interface ResolveInput {
  /** The routed model (after quota routing). */
  model: string;
  /** The parsed `agy models` listing. */
  listing: readonly string[];
  allowResolution: boolean;
  /** Only consulted when resolution is allowed. */
  fallbackModel?: string | null | undefined;
}

export interface ResolveOutcome {
  /** The model that runs (or would have run, when unavailable). */
  model: string;
  /** Diagnostics in the order they are printed. */
  events: ModelEvent[];
  /** True when the final model is not in the listing: the preflight fails with exit 70. */
  unavailable: boolean;
  /** `model '<model>' is unavailable to this Antigravity account` when unavailable, else null. */
  reason: string | null;
}

/** The preflight decision against the listing, once `agy --version` and `agy models` have succeeded. */
export function resolveAgainstListing(input: ResolveInput): ResolveOutcome {
  const { listing } = input;
  let model = input.model;
  const events: ModelEvent[] = [];
  if (input.allowResolution) {
    const resolved = newestInFamily(model, listing);
    if (resolved !== model) {
      events.push(modelEvent('MODEL-RESOLVE', model, resolved));
      model = resolved;
    }
    const fallback = input.fallbackModel;
    if (!listing.includes(model) && fallback !== null && fallback !== undefined && fallback !== '') {
      const alternative = newestInFamily(fallback, listing);
      if (listing.includes(alternative)) {
        events.push(modelEvent('MODEL-FALLBACK', model, alternative));
        model = alternative;
      }
    }
  }
  const unavailable = !listing.includes(model);
  return { model, events, unavailable, reason: unavailable ? unavailableReason(model) : null };
}

/** The exit-70 preflight reason for a model the listing lacks. */
export function unavailableReason(model: string): string {
  return `model ${pyRepr(model)} is unavailable to this Antigravity account`;
}

/**
 * The preflight's quota-note line: the line recorded when the final model differs from the routed
 * one (same pool: MODEL-RESOLVE; different pool: MODEL-FALLBACK template-unlisted), else null.
 */
export function quotaNoteLineFor(routed: string, final: string): string | null {
  if (routed === final) return null;
  return modelPool(routed) === modelPool(final) ? modelResolveLine(routed, final) : modelFallbackLine(routed, final);
}

export { pyRepr };

// --- locating the agy binary (POSIX) -----------------------------------------------------------

export { expandUser };

// Python's os.path.expandvars; its home is @prun/kit/py, re-exported for this library's users.
export { expandVars };

function realpathOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * Locating agy (POSIX): where `ANTIGRAVITY_BIN` (default `agy`) points, as a real path, or null when
 * not found. A value with `/` is a path (relative to cwd) that must be an existing regular
 * file, executable or not; a bare name is searched on PATH and must be executable.
 */
export function locateAgy(env: Readonly<Record<string, string | undefined>>, cwd: string): string | null {
  const raw = env[BIN_ENV_VAR] ?? DEFAULT_BIN;
  const value = expandVars(expandUser(raw, env), env);
  if (value === '') return null;
  if (value.includes('/')) {
    const path = resolvePath(cwd, value);
    return isRegularFile(path) ? realpathOrNull(path) : null;
  }
  return which(value, { env, cwd, realpath: true });
}
