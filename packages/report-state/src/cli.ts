import { CliError, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, commandMain, packageVersion } from '@prun/kit/cli';
import { renderHelp } from '@prun/kit/spec';
import { systemTempDir } from '@prun/unit-state';
import { parseArgs } from './options.js';
import { nodeObservationFs, observeUnit, planSweep } from './observe.js';
import { selectShown } from './report.js';
import { ReportWriter } from './render.js';
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
  const plan = planSweep(rootArgs, { cwd, only: scope?.stateDirs ?? null }, nodeObservationFs);
  if (!options.json && scope !== null && scope.badLines.length > 0) {
    process.stderr.write(`${BIN}: ledger lines ${scope.badLines.join(', ')} of ${scope.dir} are not valid entries; a state dir they name is not listed\n`);
  }
  const observeOptions = { includeLegacyPid: options.includeLegacyPid };
  const head = {
    roots: plan.roots,
    discoveryErrors: plan.discoveryErrors,
    unitCount: plan.units.length,
    includeLegacyPid: options.includeLegacyPid,
    withSummary: options.summary,
  };
  const write = (stream: 'stdout' | 'stderr', data: string | Uint8Array): void => void process[stream].write(data);
  let partial: boolean;
  if (options.sort === 'path' && plan.inPathOrder) {
    // The units come in the order they are listed: each record is laid out and written as it is
    // made and dies young (no 10,000 records kept alive until the end). Nothing after this point
    // can fail but a write (observeUnit never throws), so no output is cut short by a later error.
    const writer = new ReportWriter(head, options.json, BIN, write);
    for (const unit of plan.units) {
      const record = observeUnit(unit, observeOptions, nodeObservationFs);
      writer.count(record);
      if ((record.tail_bytes ?? 0) >= options.minTailBytes) writer.show(record);
    }
    partial = writer.end();
  } else {
    // Another order needs every record first.
    const records = plan.units.map((unit) => observeUnit(unit, observeOptions, nodeObservationFs));
    const shown = selectShown(records, { minTailBytes: options.minTailBytes, sort: options.sort }, plan.inPathOrder);
    const writer = new ReportWriter(head, options.json, BIN, write);
    for (const record of records) writer.count(record);
    for (const record of shown) writer.show(record);
    partial = writer.end();
  }
  process.exitCode = partial ? EXIT.partial : EXIT.ok;
});
