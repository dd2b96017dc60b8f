import { readFileSync } from 'node:fs';
import { HELP } from './help.js';
import { dispatch } from './run.js';


function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

export async function main(argv: string[]): Promise<void> {
  // Last line of defence: whatever escapes the dispatcher's own handling is one line, not a trace.
  process.on('uncaughtException', (error) => {
    process.stderr.write(`dispatch-task-agy: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(70);
  });
  process.exitCode = await dispatch(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    help: () => HELP,
    version: packageVersion,
  });
}
