import { describe, expect, it } from 'vitest';
import { ArgvError, exitCodeTable, parseArgv, renderHelp, replaceBetweenMarkers, markers, unknownCommand, usageLine, usageMistake } from '@prun/kit/spec';
import { DEMO } from './spec-fixture.js';

function error(argv: string[]): ArgvError {
  try {
    parseArgv(DEMO, argv);
  } catch (caught) {
    if (caught instanceof ArgvError) return caught;
    throw caught;
  }
  throw new Error(`no error for ${argv.join(' ')}`);
}

describe('parseArgv', () => {
  it('descends into nested commands and converts values by kind', () => {
    const parsed = parseArgv(DEMO, ['job', 'run', '--timeout=1.5', '-n', '3', '--add-dir', 'a', '--add-dir=b', '--mode', 'plan', '--background', 'hi']);
    expect(parsed).toMatchObject({
      kind: 'run',
      path: ['job', 'run'],
      options: { timeout: 1.5, count: 3, 'add-dir': ['a', 'b'], mode: 'plan', background: true },
      positionals: ['hi'],
    });
  });

  it('help wins where it is met, in every command, and --version anywhere', () => {
    expect(parseArgv(DEMO, ['job', 'run', '--bogus-later', '-h'])).toMatchObject({ kind: 'help', path: ['job', 'run'] });
    expect(parseArgv(DEMO, ['job', 'wait', '--help'])).toMatchObject({ kind: 'help', path: ['job', 'wait'] });
    expect(parseArgv(DEMO, ['--help', '--bogus'])).toMatchObject({ kind: 'help', path: [] });
    expect(parseArgv(DEMO, ['job', '--version'])).toEqual({ kind: 'version' });
  });

  it('names the option or word in each mistake, points at that help, with exit 2 and the command path', () => {
    expect(error(['--bogus']).message).toBe('unknown option: --bogus (see demo-bin --help)');
    expect(error(['job', 'run', '--json', 'x']).message).toBe("unknown option: --json (see demo-bin job run --help)");
    expect(error(['job', 'run', '--cwd']).message).toBe('--cwd needs a value (DIR) (see demo-bin job run --help)');
    expect(error(['job', 'run', '--background=1', 'x']).message).toBe('--background takes no value (see demo-bin job run --help)');
    expect(error(['job', 'run', '--mode', 'x', 'p']).message).toBe("--mode must be plan or accept-edits, not 'x' (see demo-bin job run --help)");
    expect(error(['job', 'run', '-n', '1.5', 'p']).message).toBe("-n must be an integer, not '1.5' (see demo-bin job run --help)");
    expect(error(['job', 'run', '--timeout', '-1', 'p']).message).toBe("--timeout must be a non-negative number of seconds, not '-1' (see demo-bin job run --help)");
    expect(error(['job', 'run', 'a', 'b']).message).toBe("unexpected argument 'b' (see demo-bin job run --help)");
    expect(error(['job', 'run']).message).toBe("missing PROMPT (see demo-bin job run --help)");
    expect(error(['job', 'frob']).message).toBe("unknown command: frob (see demo-bin job --help)");
    const e = error(['job', 'wait']);
    expect(e.exitCode).toBe(2);
    expect(e.path).toEqual(['job', 'wait']);
    expect(() => parseArgv({ ...DEMO, usageExit: 64 }, ['--x'])).toThrow(expect.objectContaining({ exitCode: 64 }));
  });

  it('says what went wrong as data (kind and word), so no caller matches the message', () => {
    const cases: Array<[string[], string, string]> = [
      [['--bogus=1'], 'unknown-option', '--bogus'],
      [['job', 'frob'], 'unknown-command', 'frob'],
      [['job', 'run', '--background=1', 'x'], 'unexpected-value', '--background'],
      [['job', 'run', '--cwd'], 'missing-value', '--cwd'],
      [['job', 'run', '-n', 'x', 'p'], 'invalid-value', '-n'],
      [['job', 'run', 'a', 'b'], 'unexpected-argument', 'b'],
      [['job', 'run'], 'missing-argument', 'PROMPT'],
    ];
    for (const [argv, kind, word] of cases) expect(error(argv)).toMatchObject({ kind, word });
    const own = usageMistake(DEMO, '--json only applies to --list', ['job']);
    expect(own).toMatchObject({ kind: 'usage', word: '', exitCode: 2, message: '--json only applies to --list (see demo-bin job --help)' });
    expect(unknownCommand(DEMO, 'frob')).toMatchObject({ kind: 'unknown-command', message: 'unknown command: frob (see demo-bin --help)' });
  });

  it("words mistakes as multi_agent.py's parser in the multi-agent dialect: as typed, no pointer, values unchecked", () => {
    const spec = { ...DEMO, argvDialect: 'multi-agent' as const, usageExit: 64 };
    const fails = (argv: string[]) => {
      try {
        parseArgv(spec, argv);
      } catch (caught) {
        return caught as ArgvError;
      }
      throw new Error(`no error for ${argv.join(' ')}`);
    };
    expect(fails(['job', 'run', '--bogus=1'])).toMatchObject({ kind: 'unknown-option', message: 'unknown option: --bogus=1', exitCode: 64 });
    expect(fails(['job', 'run', '--background=1'])).toMatchObject({ kind: 'unexpected-value', message: 'unknown option: --background=1' });
    expect(fails(['job', 'run', '-n=1', '--cwd'])).toMatchObject({ kind: 'missing-value', message: '--cwd needs a value' });
    expect(fails(['job', 'run', '--version'])).toMatchObject({ message: 'unknown option: --version' });
    expect(parseArgv(spec, ['--version'])).toEqual({ kind: 'version' });
    // Its help and completion offer --version only where it is accepted.
    expect(renderHelp(spec, ['job', 'run'])).not.toContain('--version');
    expect(renderHelp(spec)).toContain('--version');
    expect(renderHelp(DEMO, ['job', 'run'])).toContain('--version');
    // Values as typed, counts left to the command, `-n=5` split as the original's partition('=').
    expect(parseArgv(spec, ['job', 'run', '-n=x', '--timeout', 'inf', 'a', 'b'])).toMatchObject({
      kind: 'run',
      options: { count: 'x', timeout: 'inf' },
      positionals: ['a', 'b'],
    });
    expect(parseArgv(spec, ['job', 'run'])).toMatchObject({ kind: 'run', positionals: [] });
  });

  it('keeps -- and options-first semantics', () => {
    expect(parseArgv(DEMO, ['exec', '--keep', 'A', '--', 'env', '--bogus'])).toMatchObject({ options: { keep: 'A' }, rest: ['env', '--bogus'] });
    expect(parseArgv(DEMO, ['watch', 'a', '--json'])).toMatchObject({ positionals: ['a', '--json'] });
    expect(parseArgv(DEMO, ['watch', '--', '--odd'])).toMatchObject({ positionals: ['--odd'] });
    expect(error(['watch']).message).toBe('missing STATE_DIR (see demo-bin watch --help)');
  });

  it('uses a declared schema only when the value is parsed', () => {
    let built = 0;
    const spec = {
      ...DEMO,
      options: [
        {
          long: '--name',
          help: 'a name',
          value: {
            name: 'N',
            kind: 'string' as const,
            schema: () => {
              built += 1;
              return { safeParse: (v: unknown) => (v === 'ok' ? { success: true as const, data: 'OK' } : { success: false as const, error: { issues: [{ message: 'must be ok' }] } }) };
            },
          },
        },
      ],
    };
    expect(parseArgv(spec, ['job', 'wait', 'x'])).toMatchObject({ kind: 'run' });
    expect(built).toBe(0);
    expect(parseArgv(spec, ['--name', 'ok'])).toMatchObject({ options: { name: 'OK' } });
    expect(() => parseArgv(spec, ['--name', 'no'])).toThrow("--name must be ok, not 'no'");
    expect(built).toBe(2);
  });
});

describe('renderHelp', () => {
  it('shows usage, commands, options, environment and exit codes of the bin', () => {
    const help = renderHelp(DEMO);
    expect(help).toBe(`Usage: demo-bin [options] <command> [args...]

Does demonstration things.

Commands:
  job    job things
  exec   run a command
  watch  watch dirs

Options:
  --json          print JSON
  --listing FILE  read the listing from FILE
  -h, --help      show this help
  --version       print the version

Environment:
  DEMO_TIMEOUT  seconds to wait (default: 60)

Exit codes:
  0      success
  2      usage error
  128+n  killed by signal n
`);
  });

  it("shows a subcommand's own usage and options, and hides hidden commands", () => {
    const help = renderHelp(DEMO, ['job', 'run']);
    expect(help).toMatch(/^Usage: demo-bin job run \[options\] \(PROMPT \| -\)\n\nrun a job\n/);
    expect(help).toContain('  --mode plan|accept-edits');
    expect(help).toContain('limit (default: 3600)');
    expect(help).toContain('  -n, --count N');
    expect(renderHelp(DEMO, ['job'])).not.toContain('__names');
    expect(usageLine(DEMO, ['watch'])).toBe('Usage: demo-bin watch [options] STATE_DIR...'.replace(' [options]', ''));
  });

  it('argparse style uses lower-case headings', () => {
    const help = renderHelp({ ...DEMO, helpStyle: 'argparse', commands: [] });
    expect(help).toMatch(/^usage: demo-bin/);
    expect(help).toContain('\noptions:\n');
    expect(help).toContain('\nexit codes:\n');
  });
});

describe('exit-code tables', () => {
  it('renders Markdown and replaces only the fenced block', () => {
    expect(exitCodeTable(DEMO.exitCodes)).toBe('| code | meaning |\n|---|---|\n| 0 | success |\n| 2 | usage error |\n| 128+n | killed by signal `n` |');
    const { start, end } = markers('exit-codes');
    const text = `# T\n${start}\nold\n${end}\nafter\n`;
    expect(replaceBetweenMarkers(text, 'exit-codes', 'new')).toBe(`# T\n${start}\nnew\n${end}\nafter\n`);
    expect(replaceBetweenMarkers('# no markers\n', 'exit-codes', 'new')).toBeNull();
  });
});
