/**
 * Isolated chains parked ahead of the units that will take them, for a host that runs unit after
 * unit in one process (a batch's supervisor; README, "Running units in-process"). A unit's own
 * chain (one perl process, the launcher, which makes the namespace and forks the init; the unshare
 * program's three execs or setpriv's five where the plan falls back to them, isolation.ts) otherwise starts when the unit
 * does, on the path from one unit's end to the next one's worker; a spare parked while a unit
 * runs is ready when the next one comes. A spare is an ordinary parked chain: under the same
 * parent-death signal and PID namespace as every chain, killed when no unit takes it. Plain
 * bookkeeping: the chains are started and given their workers by run.ts. Made with `fork`, it
 * also owns the host's chain forker (forker.ts), from which run.ts then forks them.
 */
import type { LaunchPlan } from './isolation.js';
import { ChainForker, forkable } from './forker.js';

/** What a parked chain was started with; a unit takes one only when its own are the same. */
export interface ChainKey {
  plan: LaunchPlan;
  /** The worker's environment (scrubbed): the chain's, which agy inherits from its init. */
  env: Readonly<Record<string, string>>;
  /** Where the chain's programs start. */
  cwd: string;
}

/** The part of a parked chain the reserve handles (WorkerProcess). */
export interface SpareChain {
  /** The chain has exited (killed, or it failed to come up): it can run nothing. */
  readonly exited: boolean;
  /** Kill the chain: it will get no worker. */
  abandon(): void;
}

/** Whether two chains would run a worker alike: the same plan, directory and environment. */
export function sameChainKey(a: ChainKey, b: ChainKey): boolean {
  if (a.plan !== b.plan || a.cwd !== b.cwd) return false;
  const names = Object.keys(a.env);
  if (names.length !== Object.keys(b.env).length) return false;
  return names.every((name) => Object.hasOwn(b.env, name) && a.env[name] === b.env[name]);
}

/**
 * One spare chain at most, parked for the environment the units have been asking for. A spare
 * is parked only after two units in a row asked for the same one (a batch whose units differ in
 * model or clone, and so in environment, starts none that nobody would take), once the second
 * one's worker has started; a spare for another environment is killed when a unit asks.
 * `close` kills the spare and parks no more: the host calls it when it takes no more units.
 */
export class ChainReserve {
  private spare: { key: ChainKey; chain: SpareChain } | null = null;
  private last: ChainKey | null = null;
  private closed = false;
  private forker: ChainForker | null = null;
  /** `fork`: this host's chains may come from a chain forker (`forkerFor`). */
  constructor(private readonly options: { fork?: boolean } = {}) {}

  /**
   * A unit with `key` asks for its chain: the spare when it matches (and is still alive), else
   * null (a spare that does not match is killed). `refill` says whether this unit should park
   * the next spare once its worker runs.
   */
  take(key: ChainKey): { chain: SpareChain | null; refill: boolean } {
    const repeated = this.last !== null && sameChainKey(this.last, key);
    this.last = key;
    const spare = this.spare;
    this.spare = null;
    if (spare === null) return { chain: null, refill: repeated };
    if (!spare.chain.exited && sameChainKey(spare.key, key)) return { chain: spare.chain, refill: true };
    spare.chain.abandon();
    return { chain: null, refill: false };
  }

  /**
   * Park the next spare with `park`, unless one is waiting already or the reserve is closed.
   * `park` throws or returns null when the chain could not be started: then there is none.
   */
  refill(key: ChainKey, park: () => SpareChain | null): void {
    if (this.closed || this.spare !== null) return;
    let chain: SpareChain | null;
    try {
      chain = park();
    } catch {
      chain = null;
    }
    if (chain !== null) this.spare = { key, chain };
  }

  /** Whether a spare is waiting (for tests and the host's accounting). */
  get hasSpare(): boolean {
    return this.spare !== null;
  }

  /**
   * The host's chain forker for `plan` (forker.ts), started at the first ask: null while the
   * reserve is closed, made without `fork`, or when the plan's chain is not one a forker
   * makes. One plan has one forker; a unit asking for another plan gets none (its chain is spawned).
   */
  forkerFor(plan: LaunchPlan): ChainForker | null {
    if (this.closed || this.options.fork !== true || !forkable(plan)) return null;
    if (this.forker === null) {
      try {
        this.forker = new ChainForker(plan);
      } catch {
        return null;
      }
    }
    return this.forker.plan === plan ? this.forker : null;
  }

  /**
   * Resolves once the chain forker, if any, has exited: a host calls it after `close` and after
   * its last unit, before it ends (ChainForker.ended).
   */
  ended(graceMs = 2000): Promise<void> {
    return this.forker?.ended(graceMs) ?? Promise.resolve();
  }

  /** Kill the spare, if any, and park no more. */
  close(): void {
    this.closed = true;
    this.forker?.close();
    this.spare?.chain.abandon();
    this.spare = null;
  }
}
