/**
 * The bin's early start of its isolated chain (README, "Start-up and speed"). The shim's entry
 * (bin.ts) marks the process as the bin before it loads the command; cli.ts imports this module
 * first, so its top level runs before the rest of the command chunk (zod, quota, routing, the
 * dispatch itself) is evaluated: the chain, which is also the isolation probe, comes up on
 * another core while the dispatcher loads and validates. `runDispatch` then takes the plan and
 * the parked chain over (`takeEarlyChain`), or kills an unused chain when the dispatch ends.
 * Nothing here runs for a library import or a hosted unit: without the mark it does nothing.
 */
import { realpathSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { scrubEnv, type ScrubResult } from '@prun/env-scrub';
import { parseArgs } from './args.js';
import { cachedLaunchPlan, type IsolationSetting, type LaunchPlan, type ProbeResult } from './isolation.js';
import { parseIsolateSetting } from './settings.js';
import { WorkerProcess } from './worker.js';

/** Set by bin.ts (the shim's entry) to the bin's arguments before it loads the command. */
export const BIN_START_MARK = Symbol.for('@prun/dispatcher-agy: bin start');

/** What the early start began, for the dispatch to take over. */
export interface EarlyChain {
  setting: IsolationSetting;
  /** The real working directory the chain started in. */
  cwd: string;
  /** The scrubbed environment the chain runs with (the worker's). */
  scrubbed: ScrubResult;
  plan: Promise<LaunchPlan>;
  /** The parked chain, once the probe has started it (null: none, or it was not ready). */
  parked: WorkerProcess | null;
}

let early: EarlyChain | null = null;

/** Start the chain for `argv` when it is a dispatch that may isolate; no-op for anything else. */
function startEarlyChain(argv: readonly string[]): void {
  if (process.platform !== 'linux' || parseArgs(argv).kind !== 'args') return;
  let setting: IsolationSetting;
  let cwd: string;
  try {
    setting = parseIsolateSetting(process.env.PRUN_ISOLATE);
    cwd = realpathSync(process.cwd());
  } catch {
    // The dispatch reports a bad setting or a lost working directory itself, before anything starts.
    return;
  }
  if (setting === 'off') return;
  const scrubbed = scrubEnv(process.env);
  const chain: { parked: WorkerProcess | null } = { parked: null };
  const chainProbe = async (plan: LaunchPlan): Promise<ProbeResult> => {
    try {
      chain.parked = WorkerProcess.park({ plan, env: scrubbed.env, cwd, dispatcherPid: process.pid }, osConstants.signals);
    } catch {
      return { ok: false, why: '', stdout: '' };
    }
    const result = await chain.parked.readyInTime();
    if (!result.ok) {
      chain.parked.abandon();
      chain.parked = null;
    }
    return result;
  };
  const plan = cachedLaunchPlan(setting, process.platform, process.getuid?.() === 0, process.env, chainProbe);
  early = Object.assign(chain, { setting, cwd, scrubbed, plan });
}

/**
 * The early chain, once, for the bin's dispatch with `setting` in `cwd`; null for anything else
 * (then nothing was started for it, or the early chain is abandoned by `abandonEarlyChain`).
 */
export function takeEarlyChain(setting: IsolationSetting, cwd: string, env: NodeJS.ProcessEnv): EarlyChain | null {
  const taken = early;
  if (taken === null || env !== process.env || taken.setting !== setting || taken.cwd !== cwd) return null;
  early = null;
  return taken;
}

/** A chain started early that no dispatch took (it ended first): killed. */
export function abandonEarlyChain(): void {
  const left = early;
  early = null;
  if (left === null) return;
  left.parked?.abandon();
  // A probe still running: its chain, once parked, has nobody to give it a worker.
  void left.plan.then(() => left.parked?.abandon());
}

const marked = (globalThis as Record<symbol, unknown>)[BIN_START_MARK];
if (Array.isArray(marked)) startEarlyChain(marked as string[]);
