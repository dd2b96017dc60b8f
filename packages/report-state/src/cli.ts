import { CliError, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, commandMain, packageVersion } from '@prun/kit/cli';
import { errorWords } from '@prun/kit/fs';
import { renderHelp } from '@prun/kit/spec';
import { systemTempDir } from '@prun/unit-state';
import { parseArgs } from './options.js';
import { nodeObservationFs, observeUnit, planSweep } from './observe.js';
import { isShown, selectShown } from './report.js';
import { BufferGather, ReportWriter } from './render.js';
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
  // The output is laid out into one buffer and written once at the end (observeUnit never throws,
  // so nothing after the first record can fail but a write, and no output is cut short).
  const writer = new ReportWriter(head, options.json, BIN, new BufferGather(plan.units.length * (options.json ? 320 : 96)));
  if (options.sort === 'path' && plan.inPathOrder) {
    // The units come in the order they are listed: each record is laid out as it is made and dies
    // young (no 10,000 records kept alive until the end).
    for (const unit of plan.units) {
      const record = observeUnit(unit, observeOptions, nodeObservationFs);
      writer.count(record);
      if (isShown(record, options.minTailBytes)) writer.show(record);
    }
  } else {
    // Another order needs every record first.
    const records = plan.units.map((unit) => observeUnit(unit, observeOptions, nodeObservationFs));
    for (const record of records) writer.count(record);
    for (const record of selectShown(records, { minTailBytes: options.minTailBytes, sort: options.sort }, plan.inPathOrder)) writer.show(record);
  }
  const partial = writer.isPartial;
  sayWhenStdoutFails();
  for (const piece of writer.end()) process[piece.stream].write(piece.data);
  process.exitCode = partial ? EXIT.partial : EXIT.ok;
});

/**
 * A write to stdout that fails (a full disk, /dev/full, a descriptor closed for writing) ends the
 * run with kit's exit 70 for a stream failure; this says why, in one line on stderr, once. A reader
 * that goes away (EPIPE) is kit's broken-pipe policy and not reported. Worded as the other bins
 * word a failed call (kit/fs's errorWords: `cannot write ... (no space left on device)`).
 */
function sayWhenStdoutFails(): void {
  process.stdout.once('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') process.stderr.write(`${BIN}: cannot write the report to stdout (${errorWords(error)})\n`);
  });
}
