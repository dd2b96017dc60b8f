// What the tests that count isolated launch chains share (one-chain.test.ts, reserve.test.ts):
// whether this machine gives the dispatcher a PID namespace, and a PATH whose `unshare` records
// each chain it leads.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { planLaunch, resolveLaunchTools } from '../src/isolation.js';
import type { Root } from './harness.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';
const realUnshare = resolveLaunchTools({ PATH }).unshare;
const plan = planLaunch('auto', process.platform, process.getuid?.() === 0);

/** Why the isolated-chain tests cannot run here, or null. */
export const skip =
  plan.isolation.kind !== 'pid' ? `skipped: ${plan.isolation.reason}` : !isAbsolute(realUnshare) ? 'skipped: unshare is not on PATH' : null;

/** A test's title, with the reason it is skipped here. */
export const title = (text: string): string => (skip === null ? text : `${text} (${skip})`);

/** A PATH whose `unshare` records its pid (the chain leader's: every link execs the next) and runs the real one. */
export function countingPath(root: Root): { path: string; starts: () => number[] } {
  const bin = join(root.dir, 'counting-bin');
  const log = join(root.dir, 'unshare-starts');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'unshare'), `#!/bin/sh\necho $$ >> '${log}'\nexec '${realUnshare}' "$@"\n`, { mode: 0o755 });
  const starts = (): number[] =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map(Number)
      : [];
  return { path: `${bin}:${PATH}`, starts };
}
