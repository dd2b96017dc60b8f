import { EXIT_TEMPFAIL } from '@prun/kit/cli';
import type { Env } from './location.js';
import { DEFAULT_MODEL, SECOND_MODEL, modelPool, pyStrip, type Pool } from './models.js';
import { formatPercent } from './percent.js';
import type { PoolState, PoolStates } from './states.js';
import { REQUIRED_WINDOWS } from './windows.js';

/** The exit code of a dispatch the quota gate refuses: every bin's temporary refusal (kit's). */
export const QUOTA_EXHAUSTED_EXIT = EXIT_TEMPFAIL;
/** A healthy unpinned unit moves only when the other group leads by this much. */
export const BALANCE_MARGIN = 0.15;
/** Lets 15-point leads such as 0.20→0.35 count despite binary floating point. */
export const MARGIN_TOLERANCE = 1e-9;
/** `PRUN_AGY_QUOTA_GATE` values (stripped, lower-cased) that switch the gate off. */
export const GATE_OFF_VALUES: readonly string[] = ['0', 'off', 'false', 'disabled', 'no'];

export interface RouteDecision {
  /** The model to run (unchanged when blocked). */
  readonly model: string;
  /** A `MODEL-BALANCE` or `MODEL-FALLBACK` line, without any `<bin>: ` prefix. */
  readonly note?: string;
  /** Why the dispatch must not start (exit 75). */
  readonly block?: string;
}

export function gateEnabled(env: Env): boolean {
  return !GATE_OFF_VALUES.includes(pyStrip(env['PRUN_AGY_QUOTA_GATE'] ?? '').toLowerCase());
}

/**
 * Whether routing `model` needs the snapshot at all. When it does not (gate off, or a model in
 * no known pool), the snapshot is neither read nor refreshed.
 */
export function routeNeedsSnapshot(model: string, env: Env): boolean {
  return gateEnabled(env) && modelPool(model) !== null;
}

function hasRoom(state: PoolState): boolean {
  return state.remaining > 0;
}

function otherPool(pool: Pool): Pool {
  return pool === 'gemini' ? 'second' : 'gemini';
}

/** How a block text starts when both groups are empty, and when the Gemini group is. */
export const BOTH_EXHAUSTED_PHRASE = 'both Agy quota groups are exhausted';
export const GEMINI_EXHAUSTED_PHRASE = 'the Agy Gemini quota group is exhausted';
/** What a block text says in place of a reset time the snapshot does not give. */
export const UNKNOWN_RESET = 'later';

export function bothExhaustedText(states: PoolStates): string {
  const geminiReset = states.gemini?.reset || UNKNOWN_RESET;
  const secondReset = states.second?.reset || UNKNOWN_RESET;
  return `${BOTH_EXHAUSTED_PHRASE} (Gemini resets ${geminiReset}, Claude and GPT resets ${secondReset}).`;
}

export function geminiExhaustedText(own: PoolState, otherKnown: boolean): string {
  const text = `${GEMINI_EXHAUSTED_PHRASE} (resets ${own.reset || UNKNOWN_RESET}).`;
  if (!otherKnown) return text;
  // Spending the smaller metered group is the operator's call: the message names the way to it.
  return `${text} Wait for that reset, or name a model in the Claude and GPT group through ANTIGRAVITY_DISPATCH_MODEL if that escalation is wanted.`;
}

export function balanceNote(from: string, to: string, own: PoolState, other: PoolState): string {
  return `MODEL-BALANCE from=${from} to=${to} reason=freer-meter own=${formatPercent(own.remaining)} other=${formatPercent(other.remaining)}`;
}

/** The `reason=` of the MODEL-FALLBACK note written when the Claude and GPT group is exhausted. */
export const QUOTA_FALLBACK_REASON = 'claude-and-gpt-quota-exhausted';

export function quotaFallbackNote(from: string, own: PoolState): string {
  return `MODEL-FALLBACK from=${from} to=${DEFAULT_MODEL} reason=${QUOTA_FALLBACK_REASON} resets=${own.reset || UNKNOWN_RESET}`;
}

/**
 * An unpinned unit on the Gemini default goes to the group with the freer meter. An empty own
 * group moves on any room in the other; otherwise the other must lead by the margin and report
 * both windows, because its state is its emptiest bucket and an unreported window may be empty.
 */
export function balance(model: string, states: PoolStates): { model: string; note?: string } {
  const own = states.gemini;
  const other = states.second;
  if (own === undefined || other === undefined) return { model };
  const moved = { model: SECOND_MODEL, note: balanceNote(model, SECOND_MODEL, own, other) };
  if (!hasRoom(own) && hasRoom(other)) return moved;
  // Never move into an empty group (a negative own fraction could otherwise "lead" into one).
  if (!hasRoom(other)) return { model };
  if (other.remaining - own.remaining < BALANCE_MARGIN - MARGIN_TOLERANCE) return { model };
  if (!REQUIRED_WINDOWS.every((window) => other.windows.includes(window))) return { model };
  return moved;
}

/**
 * The routing decision (README: How it works, Routing): the model to run, a note, or a block. `states` null means the snapshot
 * was unreadable, which never blocks. `pinned` is true when the caller named the model.
 */
export function route(model: string, pinned: boolean, states: PoolStates | null, env: Env): RouteDecision {
  if (!gateEnabled(env)) return { model };
  let pool = modelPool(model);
  if (pool === null || states === null) return { model };
  let chosen = model;
  let note: string | undefined;
  if (!pinned && model === DEFAULT_MODEL) {
    const balanced = balance(model, states);
    chosen = balanced.model;
    note = balanced.note;
    pool = modelPool(chosen) ?? pool;
  }
  const own = states[pool];
  if (own === undefined || hasRoom(own)) return note === undefined ? { model: chosen } : { model: chosen, note };
  const other = states[otherPool(pool)];
  if (pool === 'second') {
    if (other === undefined || hasRoom(other)) {
      return { model: DEFAULT_MODEL, note: quotaFallbackNote(chosen, own) };
    }
    return { model: chosen, block: bothExhaustedText(states) };
  }
  if (other !== undefined && !hasRoom(other)) return { model: chosen, block: bothExhaustedText(states) };
  return { model: chosen, block: geminiExhaustedText(own, other !== undefined) };
}

/**
 * The re-check after a template-unlisted MODEL-FALLBACK (README: How it works, Routing): the new Gemini model is routed
 * as pinned, and a block comes back as `after MODEL-FALLBACK to <model>: <block>`. Null = run it.
 */
export function recheckAfterFallback(finalModel: string, states: PoolStates | null, env: Env): string | null {
  const decision = route(finalModel, true, states, env);
  return decision.block === undefined ? null : `after MODEL-FALLBACK to ${finalModel}: ${decision.block}`;
}
