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
  const rootArgs = options.roots.length > 0 ? options.roots : [systemTempDir(process.env, process.cwd())];
  const observed = sweep(rootArgs, { includeLegacyPid: options.includeLegacyPid }, nodeObservationFs);
  const report = buildReport({
    ...observed,
    display: { minTailBytes: options.minTailBytes, sort: options.sort },
    withSummary: options.summary,
    includeLegacyPid: options.includeLegacyPid,
  });
  if (options.json) {
    process.stdout.write(renderJson(report));
  } else {
    for (const chunk of renderText(report, BIN)) process[chunk.stream].write(chunk.text);
  }
  process.exitCode = isPartial(report) ? EXIT.partial : EXIT.ok;
});
