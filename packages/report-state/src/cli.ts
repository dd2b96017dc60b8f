import { CliError, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, commandMain, packageVersion } from '@prun/kit/cli';
import { renderHelp } from '@prun/kit/spec';
import { systemTempDir } from '@prun/unit-state';
import { parseArgs } from './options.js';
import { nodeObservationFs, sweep } from './observe.js';
import { buildReport, isPartial } from './report.js';
import { renderJson, renderText } from './render.js';
import { SPEC } from './spec.js';

const BIN = SPEC.name;

export const EXIT = { ok: EXIT_OK, partial: 1, usage: EXIT_USAGE, internal: EXIT_INTERNAL } as const;

export const main = commandMain(BIN, async (argv: string[]): Promise<number | void> => {
  const parsed = parseArgs(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(renderHelp(SPEC));
    process.exitCode = EXIT.ok;
    return;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${packageVersion(new URL('../package.json', import.meta.url))}\n`);
    process.exitCode = EXIT.ok;
    return;
  }
  if (parsed.kind === 'usage-error') throw new CliError(parsed.message, { exitCode: EXIT.usage });
  const { options } = parsed;
  const cwd = process.cwd();
  // --batch narrows the sweep to the state dirs its ledger recorded; their folders are the roots
  // unless --root names others.
  const scope = options.batch === null ? null : (await import('./batch.js')).batchScope(options.batch, cwd);
  // The default root is looked for only when no --root is given: probing the temp dir costs
  // system calls a sweep of the given roots does not need.
  const rootArgs = options.roots.length > 0 ? options.roots : scope === null ? [systemTempDir(process.env, cwd)] : scope.roots;
  const observed = sweep(rootArgs, { includeLegacyPid: options.includeLegacyPid, cwd, only: scope?.stateDirs ?? null }, nodeObservationFs);
  const report = buildReport({
    ...observed,
    display: { minTailBytes: options.minTailBytes, sort: options.sort },
    withSummary: options.summary,
    includeLegacyPid: options.includeLegacyPid,
  });
  if (options.json) {
    process.stdout.write(renderJson(report));
  } else {
    if (scope !== null && scope.badLines.length > 0) {
      process.stderr.write(`${BIN}: ledger lines ${scope.badLines.join(', ')} of ${scope.dir} are not valid entries; a state dir they name is not listed\n`);
    }
    for (const chunk of renderText(report, BIN)) process[chunk.stream].write(chunk.text);
  }
  process.exitCode = isPartial(report) ? EXIT.partial : EXIT.ok;
});
