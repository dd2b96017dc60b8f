// prun's command line: a router. It loads only the declarations (spec.ts, commands.ts, and the
// completion scripts made from them) and kit's parser; each other command's code is imported when
// that command runs, so `prun help` or `prun completion` loads no batch code, and a mistake the
// declaration refuses (an unknown option, a missing operand) is refused before any is loaded.
import { endProcess, packageVersion } from '@prun/kit/cli';
import { answerHelpOrVersion, parseArgv, renderHelp, unknownCommand } from '@prun/kit/spec';
import { TOOL_COMMANDS } from './commands.js';
import { fullSpec, OWN_SPEC } from './spec.js';
import { stderrLine } from './stderr.js';
import { completionScript, type Shell } from './completion.js';

/** The help of prun itself: every command, the fronted bins' summaries from their own declarations. */
async function help(): Promise<string> {
  return renderHelp(await fullSpec());
}

/** `prun help [COMMAND [SUBCOMMAND...]]`: the help `prun COMMAND ... --help` would print. */
async function runHelp(words: string[]): Promise<number> {
  const [command, ...sub] = words;
  if (command === '-h' || command === '--help') {
    process.stdout.write(renderHelp(OWN_SPEC, ['help']));
    return 0;
  }
  if (command === undefined) {
    process.stdout.write(await help());
    return 0;
  }
  const tool = TOOL_COMMANDS.find((candidate) => candidate.name === command);
  if (tool) {
    await (await tool.load()).main([...sub, '--help']);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  }
  if (OWN_SPEC.commands?.some((own) => own.name === command)) {
    process.stdout.write(renderHelp(OWN_SPEC, [command]));
    return 0;
  }
  throw unknownCommand(OWN_SPEC, command);
}

const MANIFEST = new URL('../package.json', import.meta.url);

function version(): string {
  return packageVersion(MANIFEST);
}

/**
 * prun's command line. Errors are not caught here: they reach kit's one catch (runBin, bin/prun.js),
 * a CliError with its own exit code, anything else an internal error (70).
 */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') {
    process.stdout.write(await help());
    process.exitCode = command === undefined ? 2 : 0;
    return;
  }
  if (command === 'help') {
    process.exitCode = await runHelp(rest);
    return;
  }
  if (command === '--version') {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const tool = TOOL_COMMANDS.find((candidate) => candidate.name === command);
  if (tool) {
    const loaded = await tool.load();
    await loaded.main(rest);
    // A tool whose exit code must hold against a late signal (the dispatcher) ends at its bin
    // edge once its output is flushed; prun hosting it is that edge.
    if ((loaded as { exitWhenDone?: boolean }).exitWhenDone === true) await endProcess();
    return;
  }
  if (!OWN_SPEC.commands?.some((own) => own.name === command)) {
    // `prun --bogus` is an unknown option (kit's parser says so), `prun bogus` an unknown command.
    if (command.startsWith('-')) parseArgv(OWN_SPEC, [command]);
    throw unknownCommand(OWN_SPEC, command);
  }
  // Every command of prun's own answers -h/--help and --version, as its declaration's parse says.
  const parsed = parseArgv(OWN_SPEC, argv);
  if (answerHelpOrVersion(OWN_SPEC, parsed, MANIFEST)) return;
  if (parsed.kind !== 'run') return;
  const { options, positionals } = parsed;
  switch (command) {
    case 'batch':
      process.exitCode = await (await import('./run/batch.js')).runBatch(parsed, env);
      return;
    case 'status':
      process.exitCode = await (await import('./run/status.js')).runStatus(parsed, env);
      return;
    case 'wait':
      process.exitCode = await (await import('./live/commands.js')).runWait(positionals[0]!, options.json === true);
      return;
    case 'log':
      process.exitCode = await (await import('./live/commands.js')).runLog(positionals[0]!, positionals[1]!, { follow: options.follow === true, raw: options.raw === true });
      return;
    case 'cancel':
      process.exitCode = await (await import('./run/cancel.js')).runCancel(parsed, env);
      return;
    case 'clean': {
      const flags = { dryRun: options['dry-run'] === true, snapshot: options['snapshot'] === true, clones: options['clones'] === true, json: options['json'] === true };
      process.exitCode = await (await import('./clean.js')).runClean(positionals[0]!, flags, env, process.cwd(), stderrLine);
      return;
    }
    case 'clone':
      process.stdout.write(`${(await import('./clone.js')).throwawayClone(positionals[0]!, positionals[1]!)}\n`);
      process.exitCode = 0;
      return;
    case 'completion':
      process.stdout.write(await completionScript(positionals[0] as Shell));
      process.exitCode = 0;
      return;
  }
}
