// What the panel shows, read from what the batch already keeps: its ledger entries (the driver's
// own in memory, or the ledger file for a watcher), each running unit's tail size, and the quota
// snapshot. Only reads; never refreshes the quota, never takes a lock.
import { join } from 'node:path';
import { GrowthMeter, classifyUnit, initialMemory, observeUnit, probeDispatch, statRegularFile, type UnitMemory } from '@prun/monitor';
import { buildReadout } from '@prun/quota';
import { STATE_FILES } from '@prun/unit-state';
import type { LedgerEntry } from '../ledger.js';
import { readModelFacts } from '../units.js';
import type { PanelState, PanelUnit, QuotaGroupView } from './panel.js';

/** How often the quota snapshot is read again: it changes on a refresh, minutes apart. */
const QUOTA_EVERY_MS = 5000;

const parseTime = (iso: string | null | undefined): number | null => {
  if (iso === null || iso === undefined) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
};

/** The quota groups the snapshot names, each with its smallest remaining fraction; null without a usable snapshot. */
export async function readQuotaView(env: NodeJS.ProcessEnv): Promise<QuotaGroupView[] | null> {
  try {
    // `installed: true` and no refresh starter: a read of the snapshot as it is, nothing more.
    const readout = await buildReadout({ env, installed: true });
    if (readout.status !== 'ok') return null;
    const groups = readout.groups
      .map((group) => {
        const fractions = Object.values(group.windows)
          .filter((window) => window !== null)
          .map((window) => window.remaining);
        return fractions.length === 0 ? null : { label: group.label, remaining: Math.min(...fractions) };
      })
      .filter((group): group is QuotaGroupView => group !== null);
    return groups.length === 0 ? null : groups;
  } catch {
    return null;
  }
}

export interface SamplerOptions {
  /** The batch directory as the user typed it. */
  dir: string;
  /** Its absolute path: a state dir's `result-file` is resolved against it, as the driver does. */
  batchDir: string;
  env: NodeJS.ProcessEnv;
  /** Tail quiet this long marks a unit stalled (a watcher's own reading of the monitor's rule). */
  stallSeconds: number;
  startedAtMs: number;
  jobs: number | null;
}

/** Keeps what a panel needs between looks: growth meters, stall memory, the last quota reading. */
export class PanelSampler {
  private readonly meters = new Map<string, { stateDir: string; meter: GrowthMeter; memory: UnitMemory; model: string | null; modelReadAtMs: number }>();
  private readonly settledTails = new Map<string, { stateDir: string; bytes: number | null }>();
  private quota: QuotaGroupView[] | null = null;
  private quotaReadAtMs = -Infinity;
  private quotaReading: Promise<void> | null = null;

  constructor(private readonly options: SamplerOptions) {}

  /** Read the quota snapshot again when due; the panel shows the last reading meanwhile. */
  private refreshQuota(nowMs: number): void {
    if (this.quotaReading !== null || nowMs - this.quotaReadAtMs < QUOTA_EVERY_MS) return;
    this.quotaReadAtMs = nowMs;
    this.quotaReading = readQuotaView(this.options.env).then((quota) => {
      this.quota = quota;
      this.quotaReading = null;
    });
  }

  /** Wait for a quota reading in flight (a test, or the last frame). */
  async settled(): Promise<void> {
    await this.quotaReading;
  }

  /**
   * The panel's state now. `stalled` is the driver's own verdict when it has one; a watcher
   * passes null and the monitor's rule is applied here to the same files.
   */
  sample(ids: readonly string[], latest: ReadonlyMap<string, LedgerEntry>, stalled: ReadonlySet<string> | null, nowMs = Date.now()): PanelState {
    this.refreshQuota(nowMs);
    const units = ids.map((id): PanelUnit => {
      const entry = latest.get(id);
      if (entry === undefined) {
        return { id, status: 'unknown', startedAtMs: null, endedAtMs: null, tailBytes: null, growthPerS: null, model: null, stalled: false, retryAtMs: null, attempt: 0 };
      }
      const running = entry.status === 'running';
      let tailBytes: number | null = null;
      let growthPerS: number | null = null;
      let isStalled = false;
      let model = entry.model;
      if (entry.state_dir !== null) {
        let seen = this.meters.get(id);
        if (seen === undefined || seen.stateDir !== entry.state_dir) {
          seen = { stateDir: entry.state_dir, meter: new GrowthMeter(), memory: initialMemory(nowMs), model: null, modelReadAtMs: -Infinity };
          this.meters.set(id, seen);
        }
        if (running) {
          this.settledTails.delete(id);
          tailBytes = statRegularFile(join(entry.state_dir, STATE_FILES.tail))?.size ?? null;
          growthPerS = seen.meter.sample(nowMs, tailBytes);
          // The ledger names the model once the unit settles; while it runs, its state dir does (once written).
          if (seen.model === null && nowMs - seen.modelReadAtMs >= 1000) {
            seen.modelReadAtMs = nowMs;
            seen.model = readModelFacts(entry.state_dir).model;
          }
          model = seen.model ?? model;
          if (stalled === null) {
            const stateDir = entry.state_dir;
            const facts = observeUnit(stateDir, this.options.batchDir);
            const verdict = classifyUnit(seen.memory, facts, () => probeDispatch(stateDir), { stallThresholdS: this.options.stallSeconds, stableWindowS: 0 }, nowMs);
            seen.memory = verdict.memory;
            isStalled = verdict.status.kind === 'stalled';
          }
        } else {
          // A settled unit's tail does not change: one stat when it settles is enough.
          const known = this.settledTails.get(id);
          if (known?.stateDir === entry.state_dir) {
            tailBytes = known.bytes;
          } else {
            tailBytes = statRegularFile(join(entry.state_dir, STATE_FILES.tail))?.size ?? null;
            this.settledTails.set(id, { stateDir: entry.state_dir, bytes: tailBytes });
          }
        }
      }
      if (stalled !== null) isStalled = running && stalled.has(id);
      return {
        id,
        status: entry.status,
        startedAtMs: parseTime(entry.started_at),
        endedAtMs: running ? null : parseTime(entry.ended_at),
        tailBytes,
        growthPerS,
        model,
        stalled: isStalled,
        retryAtMs: entry.status === 'deferred' ? parseTime(entry.retry_at) : null,
        attempt: entry.attempt ?? 0,
      };
    });
    return { dir: this.options.dir, units, startedAtMs: this.options.startedAtMs, nowMs, jobs: this.options.jobs, quota: this.quota };
  }
}
