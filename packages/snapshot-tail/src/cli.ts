import { readFileSync } from 'node:fs';
import { renderHelp } from '@prun/kit/spec';
import { EXIT, SnapshotError } from './errors.js';
import { BIN, USAGE, UsageError, parseArgs, parseEnv } from './options.js';
import { renderJson, renderText } from './render.js';
import { removeLiveTemporaryFiles, snapshotTail } from './snapshot.js';
import { SPEC } from './spec.js';

function packageVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return typeof raw === 'object' && raw !== null && 'version' in raw ? String(raw.version) : 'unknown';
}

function fail(code: number, lines: string[]): void {
  for (const line of lines) process.stderr.write(`${BIN}: ${line}\n`);
  process.exitCode = code;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

// A snapshot interrupted by a signal must not leave its temporary archive behind: remove it,
// then die of the same signal so the caller sees what happened. When the bin runs inside a host
// (`prun snapshot-tail`) that has its own handler, the host decides how to exit.
function onSignal(signal: NodeJS.Signals): void {
  removeLiveTemporaryFiles();
  for (const name of SIGNALS) process.removeListener(name, onSignal);
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

export async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (error) {
    if (error instanceof UsageError) return fail(EXIT.usage, [USAGE, `error: ${error.message}`]);
    throw error;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(renderHelp(SPEC));
    return;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  const { options } = parsed;
  for (const name of SIGNALS) process.on(name, onSignal);
  try {
    const outcome = await snapshotTail({
      unit: options.unit,
      ...(options.dest !== undefined ? { dest: options.dest } : {}),
      ...(options.output !== undefined ? { output: options.output } : {}),
      env: parseEnv(process.env),
      cwd: process.cwd(),
    });
    process.stdout.write(options.json ? renderJson(outcome) : renderText(outcome));
    if (outcome.warning !== null) process.stderr.write(`${BIN}: warning: ${outcome.warning}\n`);
    process.exitCode = EXIT.ok;
  } catch (error) {
    if (error instanceof SnapshotError) return fail(error.code, [`error: ${error.message}`]);
    const message = error instanceof Error ? error.message : String(error);
    return fail(EXIT.internal, [`internal error: ${message.split('\n')[0]}`]);
  } finally {
    for (const name of SIGNALS) process.removeListener(name, onSignal);
  }
}
