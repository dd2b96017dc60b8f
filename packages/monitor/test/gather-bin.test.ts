import { mkdirSync, readdirSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STATE_FILES } from '@prun/unit-state';
import { cleanEnv, count, gatherBin, gatherEnv, run, setMtimeAgo, start, tempDirs } from './helpers.js';

const { base } = tempDirs(afterAll);

// The upstream inventory (tests/test_gather.py).
describe.concurrent('prun-gather: upstream contract', () => {
  it('fires on a file complete before start', async () => {
    const b = base();
    const file = join(b, 'a.md');
    writeFileSync(file, '# a result\n');
    const r = await run(gatherBin, [file], gatherEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`GATHER-START count=1 timeout=6s\nDONE ${file}\n`);
  });

  it('multiple files all fire', async () => {
    const b = base();
    const files = ['a.md', 'b.md'].map((name) => join(b, name));
    for (const file of files) writeFileSync(file, 'x\n');
    const r = await run(gatherBin, files, gatherEnv());
    expect(r.code).toBe(0);
    expect(count(r.stdout, 'DONE')).toBe(2);
  });

  it('an empty file does not land', async () => {
    const b = base();
    const file = join(b, 'empty.md');
    writeFileSync(file, '');
    const r = await run(gatherBin, [file], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('TIMEOUT');
  });

  it('a directory is not a result (unlike bash -s): it never lands', async () => {
    const b = base();
    const dir = join(b, 'adir.md');
    mkdirSync(dir);
    writeFileSync(join(dir, 'inside'), 'x\n');
    const ready = join(b, 'ready.md');
    writeFileSync(ready, 'r\n');
    const r = await run(gatherBin, [dir, ready], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(`GATHER-START count=2 timeout=1s\nDONE ${ready}\nTIMEOUT remaining=1\n`);
  });

  it('a missing file times out', async () => {
    const b = base();
    const r = await run(gatherBin, [join(b, 'missing.md')], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('GATHER-START count=1 timeout=1s\nTIMEOUT remaining=1\n');
  });

  it('no arguments exits two with usage on stderr and nothing on stdout', async () => {
    const r = await run(gatherBin, [], gatherEnv());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    // One line, pointing at the declaration's help (docs/exit-codes.md), no hand-written usage.
    expect(r.stderr).toBe('prun-gather: need at least one <result-file> (see prun-gather --help)\n');
  });

  it('honours the quiet window', async () => {
    const b = base();
    const file = join(b, 'a.md');
    writeFileSync(file, 'x\n');
    const written = Date.now();
    const r = await run(gatherBin, [file], gatherEnv({ PRUN_GATHER_STABLE_WINDOW: '2', AGENT_CONFIG_GATHER_TIMEOUT: '30' }));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('DONE');
    expect(Date.now() - written).toBeGreaterThanOrEqual(1900);
  });

  it('the start line follows the schema', async () => {
    const b = base();
    const file = join(b, 'a.md');
    writeFileSync(file, 'x\n');
    const r = await run(gatherBin, [file], gatherEnv());
    expect(r.stdout.startsWith('GATHER-START count=1 timeout=')).toBe(true);
  });
});

describe.concurrent('prun-gather: details', () => {
  it('prints physical absolute paths, duplicates each time, and leaves the rest to the timeout', async () => {
    const b = base();
    writeFileSync(join(b, 'a.md'), 'a\n');
    writeFileSync(join(b, 'b.md'), 'b\n');
    mkdirSync(join(b, 'sub'));
    writeFileSync(join(b, 'sub', 'c.md'), 'c\n');
    symlinkSync('sub', join(b, 'lnk'));
    writeFileSync(join(b, 'empty.md'), '');
    const args = ['a.md', './b.md', 'a.md', 'lnk/c.md', 'missing.md', 'empty.md', 'sub'];
    const r = await run(gatherBin, args, gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }), { cwd: b });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(
      [
        'GATHER-START count=7 timeout=1s',
        `DONE ${b}/a.md`,
        `DONE ${b}/b.md`,
        `DONE ${b}/a.md`,
        `DONE ${b}/sub/c.md`,
        'TIMEOUT remaining=3',
        '',
      ].join('\n'),
    );
  });

  it('a timeout of zero lands nothing, even a ready file (the timeout is checked first)', async () => {
    const b = base();
    writeFileSync(join(b, 'a.md'), 'a\n');
    const r = await run(gatherBin, [join(b, 'a.md')], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '0' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('GATHER-START count=1 timeout=0s\nTIMEOUT remaining=1\n');
  });

  it('a future mtime never lands', async () => {
    const b = base();
    const file = join(b, 'a.md');
    writeFileSync(file, 'a\n');
    const future = new Date(Date.now() + 3600_000);
    utimesSync(file, future, future);
    const r = await run(gatherBin, [file], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.stdout).toContain('TIMEOUT remaining=1');
  });

  it.each([
    ['AGENT_CONFIG_GATHER_TIMEOUT', 'abc'],
    ['PRUN_GATHER_POLL', '0.5'],
    ['PRUN_GATHER_STABLE_WINDOW', '-2'],
  ])('%s=%j is a usage error naming the variable', async (name, value) => {
    const b = base();
    writeFileSync(join(b, 'a.md'), 'a\n');
    const r = await run(gatherBin, [join(b, 'a.md')], gatherEnv({ [name]: value }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe(`prun-gather: ${name} must be a non-negative integer number of seconds, got ${JSON.stringify(value)}`);
  });

  it('--help has the exit codes, --version the version', async () => {
    const help = await run(gatherBin, ['--help'], cleanEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:[\s\S]*0 +every result landed[\s\S]*2 +TIMEOUT remaining=K/);
    const version = await run(gatherBin, ['--version'], cleanEnv());
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});

describe.concurrent('prun-gather: event-driven, stdin, --json', () => {
  it('lands a file within 1.5 s of its window passing, with a 30 s poll', async () => {
    const b = base();
    const file = join(b, 'r.md');
    const g = start(gatherBin, [file], gatherEnv({ PRUN_GATHER_POLL: '30', PRUN_GATHER_STABLE_WINDOW: '1', AGENT_CONFIG_GATHER_TIMEOUT: '60' }));
    await g.lineStartingWith('GATHER-START');
    writeFileSync(`${file}.tmp`, '# r result\n');
    renameSync(`${file}.tmp`, file);
    const landed = Date.now();
    const r = await g.result;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`DONE ${file}`);
    const afterWindow = Date.now() - (landed + 1000);
    expect(afterWindow).toBeGreaterThanOrEqual(-50);
    expect(afterWindow).toBeLessThan(1500);
  });

  it('the timeout fires with no file events and a 30 s poll', async () => {
    const b = base();
    const g = start(gatherBin, [join(b, 'never.md')], gatherEnv({ PRUN_GATHER_POLL: '30', AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    await g.lineStartingWith('GATHER-START');
    const started = Date.now();
    const r = await g.result;
    expect(r.code).toBe(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('reads plain paths and STATE-DIR lines (the result the state dir names) from stdin', async () => {
    const b = base();
    const plain = join(b, 'plain.md');
    writeFileSync(plain, 'p\n');
    const unit = join(b, 'unit');
    mkdirSync(unit);
    const named = join(b, 'named.md');
    writeFileSync(join(unit, STATE_FILES.resultFile), `${named}\n`);
    writeFileSync(named, 'n\n');
    setMtimeAgo(named, 3);
    const r = await run(gatherBin, ['-'], gatherEnv(), { input: `${plain}\r\nSTATE-DIR ${unit}\n\n` });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`GATHER-START count=2 timeout=6s\nDONE ${plain}\nDONE ${named}\n`);
  });

  it('stdin without operands is a usage error', async () => {
    const r = await run(gatherBin, ['-'], gatherEnv(), { input: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('prun-gather: no <result-file> on stdin');
  });

  it('--json prints NDJSON events with the same exit codes', async () => {
    const b = base();
    const file = join(b, 'a.md');
    writeFileSync(file, 'a\n');
    const missing = join(b, 'missing.md');
    const r = await run(gatherBin, ['--json', file, missing], gatherEnv({ AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual([
      { event: 'start', count: 2, timeout: 1 },
      { event: 'done', path: file },
      { event: 'timeout', remaining: 1 },
    ]);
  });
});

describe('prun-gather: deployed-path inventory', () => {
  it('leaves nothing in TMPDIR and exits 2 on timeout (no re-exec copy)', async () => {
    const b = base();
    const tmp = join(b, 'tmp');
    mkdirSync(tmp);
    const r = await run(gatherBin, [join(b, 'never.md')], gatherEnv({ TMPDIR: tmp, AGENT_CONFIG_GATHER_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(readdirSync(tmp)).toEqual([]);
  });
});
