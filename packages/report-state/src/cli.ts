import { readFileSync } from 'node:fs';
import { renderHelp } from '@prun/kit/spec';
import { systemTempDir } from '@prun/unit-state';
import { parseArgs } from './options.js';
import { nodeObservationFs, sweep } from './observe.js';
import { buildReport, isPartial } from './report.js';
import { renderJson, renderText } from './render.js';
import { SPEC } from './spec.js';

const BIN = SPEC.name;

export const EXIT = { ok: 0, partial: 1, usage: 2, internal: 70 } as const;

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
      process.stdout.write(renderHelp(SPEC));
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
