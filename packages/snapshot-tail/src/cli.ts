import { STOP_SIGNALS, commandMain, packageVersion } from '@prun/kit/cli';
import { renderHelp } from '@prun/kit/spec';
import { EXIT, SnapshotError } from './errors.js';
import { keepToTheInterpreter } from './interpreter.js';
import { BIN, USAGE, UsageError, parseArgs, parseEnv } from './options.js';
import { SPEC } from './spec.js';

// Only argv parsing and the messages load up front; the snapshot machinery (and what it
// imports) loads once a snapshot is really asked for, so --help and --version start fast.
const loadSnapshot = () => import('./snapshot.js');
let removeLiveTemporaryFiles: () => void = () => undefined;

const MANIFEST = new URL('../package.json', import.meta.url);

function fail(code: number, lines: string[]): void {
  for (const line of lines) process.stderr.write(`${BIN}: ${line}\n`);
  process.exitCode = code;
}

// A snapshot interrupted by a signal must not leave its temporary archive behind: remove it,
// then die of the same signal so the caller sees what happened. When the bin runs inside a host
// (`prun snapshot-tail`) that has its own handler, the host decides how to exit.
function onSignal(signal: NodeJS.Signals): void {
  removeLiveTemporaryFiles();
  for (const name of STOP_SIGNALS) process.removeListener(name, onSignal);
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

async function run(argv: string[]): Promise<void> {
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
    process.stdout.write(`${packageVersion(MANIFEST)}\n`);
    return;
  }
  const { options } = parsed;
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  try {
    // Already done by the bin before anything loaded; a host (`prun snapshot-tail`) gets it here.
    keepToTheInterpreter();
    const [{ snapshotTail, removeLiveTemporaryFiles: removeTemps }, { renderJson, renderText }] = await Promise.all([
      loadSnapshot(),
      import('./render.js'),
    ]);
    removeLiveTemporaryFiles = removeTemps;
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
    // Known failures keep the upstream `error: <message>` form; anything else goes to kit's
    // one internal-error line (exit 70) through commandMain.
    if (error instanceof SnapshotError) return fail(error.code, [`error: ${error.message}`]);
    throw error;
  } finally {
    for (const name of STOP_SIGNALS) process.removeListener(name, onSignal);
  }
}

/** The bin's command: the same under its own shim and hosted by `prun snapshot-tail`; never throws. */
export const main = commandMain(BIN, run);
