import { readFileSync } from 'node:fs';
import { systemTempDir } from '@prun/unit-state';
import { parseArgs } from './options.js';
import { nodeObservationFs, sweep } from './observe.js';
import { buildReport, isPartial } from './report.js';
import { renderJson, renderText } from './render.js';

const BIN = 'prun-report-state';

export const EXIT = { ok: 0, partial: 1, usage: 2, internal: 70 } as const;

const HELP = `Usage: ${BIN} [--root DIR]... [--json] [--summary] [--sort path|tail-bytes-desc]
                         [--min-tail-bytes N] [--include-legacy-pid]

Read-only inventory of leftover prun-task-* unit state directories: for each unit, whether
its result file is present, empty, missing or unknown, and how many bytes its tail holds.
It opens nothing for writing, creates nothing, and never blocks on a FIFO or a device.

Options:
  --root DIR             a directory holding prun-task-* units (repeatable; default: the
                         system temporary directory, TMPDIR, TEMP, TMP, /tmp, ...)
  --json                 one JSON document (schema_version 1) instead of the table
  --summary              add counts by result and by path state, and the two byte counters
  --sort ORDER           path (default) or tail-bytes-desc
  --min-tail-bytes N     list only units whose tail holds at least N bytes (display only:
                         counts, summary and exit code still cover every unit)
  --include-legacy-pid   add the recorded dispatch-pid text (never verified)
  -h, --help             this help
  --version              print the version

Exit codes:
  0   every root was listed and every unit observed without an error
  1   some root or unit could not be fully observed (everything readable is still reported)
  2   usage error
  70  internal error

Snapshotting a tail is the only safe operation offered here. This output does not
establish that deleting, overwriting, or promoting any unit is safe.
`;

function version(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const found = (raw as { version?: unknown }).version;
  return typeof found === 'string' ? found : 'unknown';
}

/** A reader that stops early (`| head`) is not an error worth a stack trace. */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') return;
    process.exitCode = EXIT.internal;
  });
}

export async function main(argv: string[]): Promise<void> {
  quietOnClosedPipe(process.stdout);
  quietOnClosedPipe(process.stderr);
  try {
    const parsed = parseArgs(argv);
    if (parsed.kind === 'help') {
      process.stdout.write(HELP);
      process.exitCode = EXIT.ok;
      return;
    }
    if (parsed.kind === 'version') {
      process.stdout.write(`${version()}\n`);
      process.exitCode = EXIT.ok;
      return;
    }
    if (parsed.kind === 'usage-error') {
      process.stderr.write(`${BIN}: ${parsed.message}\n`);
      process.exitCode = EXIT.usage;
      return;
    }
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
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${BIN}: internal error: ${detail.split('\n')[0]}\n`);
    process.exitCode = EXIT.internal;
  }
}
