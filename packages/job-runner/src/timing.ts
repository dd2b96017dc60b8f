import { pyFloat } from '@prun/kit/py';
import { CommandError } from './errors.js';

/** The waits of the original, all multiplied by MULTI_AGENT_TIME_SCALE (tests make them short). */
export interface Timings {
  scale: number;
  ackS: number;
  settleS: number;
  piExitGraceS: number;
  piTermGraceS: number;
  runnerStopGraceS: number;
  lockS: number;
  waitPollS: number;
}

export const BACKGROUND_TIMEOUT_S = 3600;
export const DEFAULT_MAX_DEPTH = 2;
export const RECENT_S = 24 * 3600;

export function parseTimeScale(value: string | undefined): number {
  const text = value || '1';
  const scale = parseFloatStrict(text);
  if (scale === undefined || !(scale > 0) || !Number.isFinite(scale)) {
    throw new CommandError(`MULTI_AGENT_TIME_SCALE needs a positive number, got: ${text}`);
  }
  return scale;
}

export function timingsFor(scale: number): Timings {
  const piExitGraceS = 10 * scale;
  const piTermGraceS = 5 * scale;
  return {
    scale,
    ackS: 10 * scale,
    settleS: 30 * scale,
    piExitGraceS,
    piTermGraceS,
    // kill waits for the runner's whole stop sequence for pi, plus a margin.
    runnerStopGraceS: piExitGraceS + piTermGraceS + 5 * scale,
    lockS: 5 * scale,
    waitPollS: 0.5 * scale,
  };
}

export function timingsFromEnv(env: NodeJS.ProcessEnv): Timings {
  return timingsFor(parseTimeScale(env['MULTI_AGENT_TIME_SCALE']));
}

/** Python's float() of a str (kit's pyFloat), undefined where Python raises ValueError. */
export function parseFloatStrict(text: string): number | undefined {
  return pyFloat(text) ?? undefined;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll until check() is false; false if it is still true after timeoutS seconds. */
export async function waitWhile(check: () => boolean, timeoutS: number): Promise<boolean> {
  const end = Date.now() + timeoutS * 1000;
  while (check()) {
    if (Date.now() >= end) return false;
    await sleep(100);
  }
  return true;
}
