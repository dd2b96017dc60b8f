// `prun status DIR [--json | --watch]`. Loaded only when `prun status` runs (cli.ts routes).
import { CliError } from '@prun/kit/cli';
import { batchPaths } from '../paths.js';
import { resolveBatchDir } from '../ledger.js';
import { batchStatus, renderStatus } from '../status.js';
import { stderrLine, type OwnArgs } from '../stderr.js';

export async function runStatus({ options: values, positionals }: OwnArgs, env: NodeJS.ProcessEnv): Promise<number> {
  if (values.watch === true) {
    if (values.json === true) throw new CliError('status: --watch and --json do not go together (prun wait DIR --json prints the final summary)');
    return (await import('../live/commands.js')).runStatusWatch(positionals[0]!, env);
  }
  const dir = resolveBatchDir(positionals[0]!, process.cwd());
  const status = batchStatus(dir);
  for (const warning of status.warnings) stderrLine(warning);
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ dir: batchPaths(dir).dir, driver_pid: status.driverPid, units: status.units })}\n`
      : `${status.driverPid === null ? '' : `driven by prun pid ${status.driverPid}\n`}${renderStatus(status.units, status.endedUnwatched, status.notStarted)}`,
  );
  return 0;
}
