// `prun cancel DIR ID...`. Loaded only when `prun cancel` runs (cli.ts routes).
import { resolve } from 'node:path';
import { batchPaths } from '../paths.js';
import { cancelUnits, renderCancel } from '../cancel.js';
import { EXIT } from '../errors.js';
import { liveLockHolder } from '../lock.js';
import { stderrLine, type OwnArgs } from '../stderr.js';

export async function runCancel({ positionals }: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
  const [dir, ...ids] = positionals as [string, ...string[]];
  const reports = await cancelUnits(dir, ids, { env, cwd: process.cwd(), message: stderrLine });
  process.stdout.write(renderCancel(reports, liveLockHolder(batchPaths(resolve(dir)).lock)));
  return EXIT.ok;
}
