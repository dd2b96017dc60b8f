import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STATE_FILES } from '@prun/unit-state';
import {
  cleanEnv,
  deadPid,
  makeStateDir,
  monitorBin,
  monitorEnv,
  run,
  setMtimeAgo,
  start,
  tempDirs,
  packageRoot,
  count,
  untilWatching,
} from './helpers.js';

const mainAsNobody = fileURLToPath(new URL('../../../tools/main-as-nobody.mjs', import.meta.url));
const monitorCli = fileURLToPath(new URL('../dist/monitor-cli.js', import.meta.url));

const { base } = tempDirs(afterAll);

// The upstream inventory (tests/test_monitor.py, 13 contract tests).
describe.concurrent('prun-monitor: upstream contract', () => {
  it('all done exits zero', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\nok\n' });
    const u2 = makeStateDir(b, 'u2', { result: '# u2 result\nok\n' });
    const r = await run(monitorBin, [u1.dir, u2.dir], monitorEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('MONITOR-EVENT all-done');
    expect(count(r.stdout, ' done')).toBe(2);
    expect(r.stdout).toBe(
      'MONITOR-START units=2 stall-threshold=1s timeout=8s\nMONITOR-EVENT all-done\nUNIT u1 done\nUNIT u2 done\n',
    );
  });

  it('a FALLBACK result (Codex header) is a failure', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result (FALLBACK, worker wrote no result file)\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT fail');
    expect(r.stdout).toContain('UNIT u1 failed(fallback)');
  });

  it('a FALLBACK result (Agy header) is a failure', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result (FALLBACK, Agy wrote no final result)\nbody\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT fail');
    expect(r.stdout).toContain('failed(fallback)');
  });

  it('a frozen tail with no result stalls', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen output\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT stall');
    expect(r.stdout).toMatch(/UNIT u1 stalled\(1s\)/);
  });

  it('a dead dispatcher is a failure', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen output\n', dispatchPid: String(deadPid()) });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT fail');
    expect(r.stdout).toContain('UNIT u1 failed(dispatch-dead)');
  });

  it('mixed done and stall reports both', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\nok\n' });
    const u2 = makeStateDir(b, 'u2', { tail: 'frozen\n' });
    const r = await run(monitorBin, [u1.dir, u2.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT stall');
    expect(r.stdout).toContain('UNIT u1 done');
    expect(r.stdout).toContain('UNIT u2 stalled(');
  });

  it('no arguments exits two with usage-error on stdout and usage on stderr', async () => {
    const r = await run(monitorBin, [], monitorEnv());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-EVENT usage-error\n');
    expect(r.stderr).toContain('prun-monitor: need at least one <state-dir>');
    expect(r.stderr).toContain('Usage:');
  });

  it('the start line follows the schema', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: 'ok\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.stdout.startsWith('MONITOR-START units=1 stall-threshold=')).toBe(true);
    expect(r.stdout.split('\n')[0]).toMatch(/^MONITOR-START units=1 stall-threshold=1s timeout=8s$/);
  });

  it('a FALLBACK header quoted on the first line is done', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result: audit of `result (FALLBACK, ` matching\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('the FALLBACK header is case-sensitive', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result (fallback, lowercase mention)\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('FALLBACK only matches the header, not the body', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\nmentions # u1 result (FALLBACK, x) in the body\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('u1 done');
    expect(r.stdout).not.toContain('failed(fallback)');
  });

  it('a fresh result with a dead dispatcher becomes done, never dispatch-dead', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\nok\n', backdate: false, dispatchPid: String(deadPid()) });
    const r = await run(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_STABLE_WINDOW: '2', PRUN_MONITOR_TIMEOUT: '20' }));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
    expect(r.stdout).not.toContain('failed(dispatch-dead)');
    expect(r.ms).toBeGreaterThanOrEqual(1500);
  });

  it('times out with exit two', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv({ PRUN_STALL_THRESHOLD: '999', PRUN_MONITOR_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('MONITOR-EVENT timeout');
    expect(r.stdout).toContain('UNIT u1 growing');
  });
});

describe.concurrent('prun-monitor: output details', () => {
  it('prints every operand in order, duplicates and trailing slashes included, with priority fail > stall', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\nok\n' });
    const u2 = makeStateDir(b, 'u2', { result: '# u2 result (FALLBACK, x)\n' });
    const u3 = makeStateDir(b, 'u3', { tail: 'frozen\n' });
    const r = await run(monitorBin, [u3.dir + '/', u1.dir, u2.dir, u1.dir], monitorEnv({ PRUN_STALL_THRESHOLD: '0' }));
    expect(r.code).toBe(3);
    expect(r.stdout.split('\n').slice(1)).toEqual([
      'MONITOR-EVENT fail',
      expect.stringMatching(/^UNIT u3 (growing|stalled\(0s\))$/),
      'UNIT u1 done',
      'UNIT u2 failed(fallback)',
      'UNIT u1 done',
      '',
    ]);
  });

  it('a result newer than the window stays finishing until the timeout', async () => {
    const b = base();
    const u1 = makeStateDir(b, 't2', { result: '# t2 result\n', backdate: false });
    const r = await run(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_STABLE_WINDOW: '100', PRUN_MONITOR_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-START units=1 stall-threshold=1s timeout=1s\nMONITOR-EVENT timeout\nUNIT t2 finishing\n');
  });

  it('a timeout of zero still makes one full pass', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_TIMEOUT: '0' }));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('MONITOR-EVENT all-done');
  });

  it('an empty result file is not a result; a result that is a directory is not either', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '' });
    const u2 = makeStateDir(b, 'u2', {});
    mkdirSync(u2.result);
    const r = await run(monitorBin, [u1.dir, u2.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT stall');
    expect(r.stdout).toMatch(/UNIT u1 stalled\(1s\)\nUNIT u2 stalled\(1s\)/);
  });

  it('a relative result entry resolves against the monitor working directory', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', {});
    writeFileSync(join(b, 'rel.md'), '# u1 result\n');
    setMtimeAgo(join(b, 'rel.md'), 5);
    writeFileSync(join(u1.dir, STATE_FILES.resultFile), 'rel.md\n');
    const r = await run(monitorBin, ['u1'], monitorEnv(), { cwd: b });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('--help lists the exit codes; --version prints the package version', async () => {
    const help = await run(monitorBin, ['--help'], cleanEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:[\s\S]*0 +MONITOR-EVENT all-done[\s\S]*3 +MONITOR-EVENT fail[\s\S]*2 +MONITOR-EVENT timeout/);
    const version = await run(monitorBin, ['--version'], cleanEnv());
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('an unknown option is a usage error; after -- it is an operand', async () => {
    const r = await run(monitorBin, ['--bogus'], monitorEnv());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-EVENT usage-error\n');
    expect(r.stderr).toBe('prun-monitor: unknown option: --bogus (see prun-monitor --help)\n');
    const b = base();
    makeStateDir(b, '--odd', { result: '# u result\n' });
    const ok = await run(monitorBin, ['--', '--odd'], monitorEnv(), { cwd: b });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('UNIT --odd done');
  });
});

describe.concurrent('prun-monitor: without the original quirks', () => {
  it('a CR at the end of the result-file entry is stripped', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\r\nok\r\n' });
    writeFileSync(join(u1.dir, STATE_FILES.resultFile), `${u1.result}\r\n`);
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('a missing tail counts as size 0: no error, the stall clock runs from the first look', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: null });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('UNIT u1 stalled(1s)');
    expect(r.stderr).toBe('');
  });

  it('a tail that appears after the first look counts as growth', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: null });
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_STALL_THRESHOLD: '2', PRUN_MONITOR_TIMEOUT: '20' }));
    await m.lineStartingWith('MONITOR-START');
    const appeared = Date.now();
    writeFileSync(join(u1.dir, STATE_FILES.tail), 'late output\n');
    const r = await m.result;
    expect(r.stdout).toContain('UNIT u1 stalled(2s)');
    // The stall clock restarted when the tail appeared, so the stall comes 2 s after that.
    expect(Date.now() - appeared).toBeGreaterThanOrEqual(1500);
  });

  it('a live dispatcher owned by another user (EPERM) is alive: stalled, not dead', async () => {
    const b = base();
    chmodSync(b, 0o755);
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    const isRoot = process.getuid?.() === 0;
    // As root, run the monitor as nobody (loaded as root, then dropped) and point it at a
    // root-owned process (this test runner).
    const pid = isRoot ? process.pid : 1;
    writeFileSync(join(u1.dir, STATE_FILES.dispatchPid), `${pid}\n`);
    for (const path of [u1.dir, join(u1.dir, STATE_FILES.tail), join(u1.dir, STATE_FILES.resultFile), join(u1.dir, STATE_FILES.dispatchPid)]) {
      chmodSync(path, 0o755);
    }
    const r = isRoot
      ? await run(mainAsNobody, [monitorCli, u1.dir], monitorEnv())
      : await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT stall');
    expect(r.stdout).toContain('UNIT u1 stalled(');
    expect(r.stdout).not.toContain('dispatch-dead');
  });

  it('a pid that is not all digits is no pid: stalled, never signalled', async () => {
    const b = base();
    const dead = deadPid();
    const values = ['abc', '0x10', `+${dead}`, ` ${dead}`, `${dead} `, '0', '-1', ''];
    const dirs = values.map((value, i) => makeStateDir(b, `p${i}`, { tail: 'frozen\n', dispatchPid: value }).dir);
    const r = await run(monitorBin, dirs, monitorEnv());
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('MONITOR-EVENT stall');
    expect(count(r.stdout, 'stalled(')).toBe(values.length);
  });

  it('a CRLF pid of a dead process is read as that pid: dispatch-dead', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    writeFileSync(join(u1.dir, STATE_FILES.dispatchPid), `${deadPid()}\r\n`);
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.stdout).toContain('UNIT u1 failed(dispatch-dead)');
  });

  it.each([
    ['PRUN_STALL_THRESHOLD', 'abc'],
    ['PRUN_MONITOR_POLL', '1.5'],
    ['PRUN_MONITOR_TIMEOUT', '-1'],
    ['PRUN_MONITOR_STABLE_WINDOW', ' 3'],
    ['PRUN_MONITOR_STABLE_WINDOW', '3\n'],
    ['PRUN_MONITOR_TIMEOUT', '99999999999999999999'],
  ])('a setting that is not a non-negative integer is a usage error: %s=%j', async (name, value) => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv({ [name]: value }));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-EVENT usage-error\n');
    expect(r.stderr).toBe(`prun-monitor: ${name} must be a non-negative integer number of seconds, got ${JSON.stringify(value)}\n`);
  });

  it('an empty setting means the default', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const r = await run(monitorBin, [u1.dir], cleanEnv({ PRUN_STALL_THRESHOLD: '', PRUN_MONITOR_TIMEOUT: '', PRUN_MONITOR_STABLE_WINDOW: '0' }));
    expect(r.stdout.split('\n')[0]).toBe('MONITOR-START units=1 stall-threshold=600s timeout=3600s');
  });
});

describe.concurrent('prun-monitor: event-driven', () => {
  it('reports a result within 1.5 s of its stable window passing, with a 30 s poll', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', {});
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_POLL: '30', PRUN_MONITOR_STABLE_WINDOW: '1', PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_TIMEOUT: '60' }));
    await m.lineStartingWith('MONITOR-START');
    const temp = `${u1.result}.tmp`;
    writeFileSync(temp, '# u1 result\nok\n');
    renameSync(temp, u1.result);
    const landed = Date.now();
    const r = await m.result;
    const afterWindow = Date.now() - (landed + 1000);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
    expect(afterWindow).toBeGreaterThanOrEqual(-50);
    expect(afterWindow).toBeLessThan(1500);
  });

  it('a FALLBACK written in place (no rename) is seen as fast', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', {});
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_POLL: '30', PRUN_MONITOR_STABLE_WINDOW: '0', PRUN_STALL_THRESHOLD: '600' }));
    await m.lineStartingWith('MONITOR-START');
    writeFileSync(u1.result, '# u1 result (FALLBACK, Agy wrote no final result)\n');
    // Seen by its file event, with no stopwatch: the next poll (30 s) comes after the 8 s timeout,
    // so a monitor that missed the event would end with the timeout instead.
    const r = await m.result;
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('UNIT u1 failed(fallback)');
  });

  it('a result-file entry written after start is followed to its result', async () => {
    const b = base();
    const dir = join(b, 'u1');
    mkdirSync(dir);
    const m = start(monitorBin, [dir], monitorEnv({ PRUN_MONITOR_POLL: '30', PRUN_STALL_THRESHOLD: '600' }));
    await m.lineStartingWith('MONITOR-START');
    const result = join(b, 'later', 'u1.md');
    mkdirSync(join(b, 'later'));
    writeFileSync(join(dir, STATE_FILES.resultFile), `${result}\n`);
    // The monitor has followed the entry once it watches the result's directory.
    await untilWatching(m.child.pid!, join(b, 'later'));
    writeFileSync(result, '# u1 result\n');
    // Seen by its file event, with no stopwatch: the next poll (30 s) comes after the 8 s timeout,
    // so a monitor that missed the event would end with the timeout instead.
    const r = await m.result;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('a result in a directory created after start is seen as fast (its nearest existing ancestor is watched)', async () => {
    const b = base();
    const dir = join(b, 'u1');
    mkdirSync(dir);
    const result = join(b, 'made', 'later', 'u1.md');
    writeFileSync(join(dir, STATE_FILES.resultFile), `${result}\n`);
    const m = start(monitorBin, [dir], monitorEnv({ PRUN_MONITOR_POLL: '30', PRUN_STALL_THRESHOLD: '600' }));
    await m.lineStartingWith('MONITOR-START');
    // The first look watches the nearest existing ancestor of the result.
    await untilWatching(m.child.pid!, b);
    mkdirSync(join(b, 'made', 'later'), { recursive: true });
    writeFileSync(result, '# u1 result (FALLBACK, Agy wrote no final result)\n');
    // Seen by its file event, with no stopwatch: the next poll (30 s) comes after the 8 s timeout,
    // so a monitor that missed the event would end with the timeout instead.
    const r = await m.result;
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('UNIT u1 failed(fallback)');
  });

  it('the stall clock works with no file events and a 30 s poll', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_POLL: '30' }));
    await m.lineStartingWith('MONITOR-START');
    const started = Date.now();
    const r = await m.result;
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('UNIT u1 stalled(1s)');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('the timeout works with no file events and a 30 s poll', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_POLL: '30', PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_TIMEOUT: '1' }));
    await m.lineStartingWith('MONITOR-START');
    const started = Date.now();
    const r = await m.result;
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('MONITOR-EVENT timeout');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a state directory that does not exist yet is picked up by polling', async () => {
    const b = base();
    const dir = join(b, 'u1');
    const m = start(monitorBin, [dir], monitorEnv({ PRUN_STALL_THRESHOLD: '600' }));
    await m.lineStartingWith('MONITOR-START');
    makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const r = await m.result;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('UNIT u1 done');
  });

  it('a growing tail keeps the unit from stalling', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'start\n' });
    // Threshold 2 s against a write every 100 ms leaves room for a loaded machine.
    const m = start(monitorBin, [u1.dir], monitorEnv({ PRUN_STALL_THRESHOLD: '2', PRUN_MONITOR_TIMEOUT: '3' }));
    await m.lineStartingWith('MONITOR-START');
    const writer = setInterval(() => writeFileSync(join(u1.dir, STATE_FILES.tail), 'more\n', { flag: 'a' }), 100);
    const r = await m.result;
    clearInterval(writer);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('UNIT u1 growing');
  });
});

describe.concurrent('prun-monitor: operands from stdin and --json', () => {
  it('reads STATE-DIR and plain lines; ends with all-done once input ends', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const u2 = makeStateDir(b, 'u2', { result: '# u2 result\n' });
    const r = await run(monitorBin, ['-'], monitorEnv({ PRUN_STALL_THRESHOLD: '600' }), { input: `STATE-DIR ${u1.dir}\n${u2.dir}\r\n\n` });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'MONITOR-START units=2 stall-threshold=600s timeout=8s\nMONITOR-EVENT all-done\nUNIT u1 done\nUNIT u2 done\n',
    );
  });

  it('withholds all-done while input is open: every unit done so far is not all units', async () => {
    const b = base();
    const results = join(b, 'results');
    mkdirSync(results);
    const unit = (name: string, text: string): string => {
      const dir = join(b, name);
      mkdirSync(dir);
      writeFileSync(join(results, `${name}.md`), text);
      writeFileSync(join(dir, STATE_FILES.resultFile), `${join(results, name)}.md\n`);
      return dir;
    };
    const u1 = unit('u1', '# u1 result\n');
    const u2 = unit('u2', '# u2 result\n');
    const m = start(monitorBin, ['-'], monitorEnv({ PRUN_STALL_THRESHOLD: '600' }));
    m.child.stdin!.write(`STATE-DIR ${u1}\n${u2}\n`);
    // Watching the results' directory means both units were looked at (and found done).
    await untilWatching(m.child.pid!, results);
    // A later unit fails: a monitor that had declared all-done would have ended with units=2.
    m.child.stdin!.end(`${unit('u3', '# u3 result (FALLBACK, Agy wrote no final result)\n')}\n`);
    const r = await m.result;
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(
      'MONITOR-START units=3 stall-threshold=600s timeout=8s\nMONITOR-EVENT fail\nUNIT u1 done\nUNIT u2 done\nUNIT u3 failed(fallback)\n',
    );
  });

  it('reports a fail while input is still open (a hung dispatcher holds the pipe)', async () => {
    const b = base();
    const ok = makeStateDir(b, 'ok', { result: '# ok result\n' });
    const bad = makeStateDir(b, 'bad', { result: '# bad result (FALLBACK, Agy wrote no final result)\n' });
    const m = start(monitorBin, ['-'], monitorEnv({ PRUN_STALL_THRESHOLD: '600' }));
    m.child.stdin!.write(`STATE-DIR ${ok.dir}\nSTATE-DIR ${bad.dir}\n`);
    const r = await m.result;
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(
      'MONITOR-START units=2 stall-threshold=600s timeout=8s\nMONITOR-EVENT fail\nUNIT ok done\nUNIT bad failed(fallback)\n',
    );
  });

  it('the timeout fires while stdin is open and has given no operand yet (a dispatcher hung before STATE-DIR)', async () => {
    const m = start(monitorBin, ['-'], monitorEnv({ PRUN_MONITOR_TIMEOUT: '1', PRUN_MONITOR_POLL: '30' }));
    const r = await m.result;
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-START units=0 stall-threshold=1s timeout=1s\nMONITOR-EVENT timeout\n');
    expect(r.stderr).toBe('');
    // Stdin stays open: without the timer the monitor would wait for the helper's 40 s kill.
    expect(r.ms).toBeLessThan(15_000);
  });

  it('empty stdin is a usage error', async () => {
    const r = await run(monitorBin, ['-'], monitorEnv(), { input: '\n' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('MONITOR-EVENT usage-error\n');
    expect(r.stderr).toContain('prun-monitor: no <state-dir> on stdin');
  });

  it('--json prints the same events as NDJSON with the same exit code', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { result: '# u1 result\n' });
    const u2 = makeStateDir(b, 'u2', { result: '# u2 result (FALLBACK, x)\n' });
    const r = await run(monitorBin, ['--json', u1.dir, u2.dir], monitorEnv());
    expect(r.code).toBe(3);
    const records = r.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown);
    expect(records).toEqual([
      { event: 'start', units: 2, stall_threshold: 1, timeout: 8 },
      {
        event: 'fail',
        units: [
          { unit: 'u1', status: 'done', state_dir: u1.dir, result: u1.result },
          { unit: 'u2', status: 'failed(fallback)', state_dir: u2.dir, result: u2.result },
        ],
      },
    ]);
    const usage = await run(monitorBin, ['--json'], monitorEnv());
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toMatchObject({ event: 'usage-error' });
  });

  it('prints nothing extra on stderr when stderr is not a TTY', async () => {
    const b = base();
    const u1 = makeStateDir(b, 'u1', { tail: 'frozen\n' });
    const r = await run(monitorBin, [u1.dir], monitorEnv());
    expect(r.stderr).toBe('');
  });
});

// tests/test_prun_deployed_path.py (Windows-only upstream; the parts that hold anywhere).
describe.concurrent('prun-monitor: deployed-path inventory', () => {
  it('leaves nothing in TMPDIR and exits 2 on timeout (no re-exec copy)', async () => {
    const b = base();
    const tmp = join(b, 'tmp');
    mkdirSync(tmp);
    const u1 = makeStateDir(b, 'u1', { tail: '' });
    writeFileSync(join(u1.dir, STATE_FILES.resultFile), join(b, 'never.md'));
    const r = await run(monitorBin, [u1.dir], monitorEnv({ TMPDIR: tmp, PRUN_STALL_THRESHOLD: '600', PRUN_MONITOR_TIMEOUT: '1' }));
    expect(r.code).toBe(2);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('reads a live dispatch pid as stalled, not dead', async () => {
    const b = base();
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const u1 = makeStateDir(b, 'u1', { tail: '', dispatchPid: String(sleeper.pid) });
      const r = await run(monitorBin, [u1.dir], monitorEnv({ PRUN_MONITOR_TIMEOUT: '3' }));
      expect(r.code).toBe(3);
      expect(r.stdout).toContain('stalled(');
      expect(r.stdout).not.toContain('failed(dispatch-dead)');
    } finally {
      sleeper.kill();
    }
  });
});

// MonitorScriptsTracked / GatherScriptsTracked: the entry points exist where package.json says.
describe('bins are shipped', () => {
  it('package.json names both bins and their shims exist', () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(Object.keys(pkg.bin).sort()).toEqual(['prun-gather', 'prun-monitor']);
    for (const path of Object.values(pkg.bin)) expect(existsSync(join(packageRoot, path))).toBe(true);
    expect(existsSync(join(packageRoot, 'dist', 'monitor-cli.js'))).toBe(true);
    expect(existsSync(join(packageRoot, 'dist', 'gather-cli.js'))).toBe(true);
  });
});
