// The acceptance scenario: three units (one succeeds, one ends in a FALLBACK, one hangs) piped
// into `prun-monitor -`. The monitor must wake with `fail` and the right digest within a second
// of the failing result becoming stable, although the hung dispatcher keeps the pipe open.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STATE_FILES, fallbackHeader, formatStateDirLine, publishAtomic, renderFallback, resultHeader } from '@prun/unit-state';
import { cleanEnv, monitorBin, monitorEnv, repoRoot, run, start, tempDirs, until, untilWatching } from './helpers.js';

const { base } = tempDirs(afterAll);

const WINDOW_S = 1;
const monitorSettings = {
  PRUN_MONITOR_STABLE_WINDOW: String(WINDOW_S),
  // Polling alone would take up to 30 s: only file events make the deadline.
  PRUN_MONITOR_POLL: '30',
  PRUN_STALL_THRESHOLD: '600',
  PRUN_MONITOR_TIMEOUT: '120',
};

const dispatcherCli = join(repoRoot, 'packages', 'dispatcher-agy', 'dist', 'cli.js');
const dispatcherBin = join(repoRoot, 'packages', 'dispatcher-agy', 'bin', 'prun-dispatch-agy.js');
const fakeAgy = join(repoRoot, 'tools', 'fake-agy', 'fake-agy');
const dispatcherReady =
  existsSync(dispatcherCli) && existsSync(fakeAgy) && !readFileSync(dispatcherCli, 'utf8').includes('not implemented yet');

function digestOf(stdout: string): string[] {
  return stdout.split('\n').filter((line) => line.startsWith('UNIT ')).sort();
}

describe('acceptance: fail wakes the monitor while a unit hangs', () => {
  it.skipIf(!dispatcherReady)(`end to end with prun-dispatch-agy and the fake agy${dispatcherReady ? '' : ' (skipped: the dispatcher is not built, run pnpm build)'}`, async () => {
    const dir = base();
    writeFileSync(join(dir, 'prompt.txt'), 'Audit section 3\n');
    const env = cleanEnv({
      HOME: dir,
      TMPDIR: dir,
      ANTIGRAVITY_BIN: fakeAgy,
      AGY_QUOTA_CACHE: join(dir, 'no-quota-snapshot.json'),
      PRUN_AGY_QUOTA_GATE: 'off',
      ANTIGRAVITY_PREFLIGHT: 'off',
      MONITOR: monitorBin,
      DISPATCH: dispatcherBin,
      NODE: process.execPath,
      ...monitorSettings,
    });
    const dispatch = (unit: string, steer: string): string =>
      `${steer} "$NODE" "$DISPATCH" --prompt-file prompt.txt --result-file "$PWD/${unit}.md" --unit-id ${unit} &`;
    // The failing unit answers late, so the monitor is surely watching when its FALLBACK lands.
    const script = [
      '{',
      dispatch('ok', `FAKE_AGY_RESPONSE='# ok result\nConclusion: complete\n'`),
      dispatch('bad', 'FAKE_AGY_NO_RESULT=1 FAKE_AGY_EXIT=3 FAKE_AGY_DELAY_MS=4000'),
      dispatch('hang', 'FAKE_AGY_HANG=1'),
      'wait; } | "$NODE" "$MONITOR" -',
    ].join('\n');
    const pipeline = spawn('bash', ['-c', script], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    pipeline.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    try {
      const wokeAt = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no event; stdout: ${stdout}; stderr: ${stderr}`)), 60_000);
        pipeline.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          if (/MONITOR-EVENT .*\n(UNIT .*\n){3}/.test(stdout)) {
            clearTimeout(timer);
            resolve(Date.now());
          }
        });
      });
      expect(stdout.split('\n')[0]).toBe('MONITOR-START units=3 stall-threshold=600s timeout=120s');
      expect(stdout).toContain('MONITOR-EVENT fail\n');
      const [bad, hang, ok] = digestOf(stdout);
      expect(bad).toMatch(/^UNIT prun-task-[0-9a-f]{8}-bad-\d+-[0-9a-f]{16} failed\(fallback\)$/);
      expect(hang).toMatch(/^UNIT prun-task-[0-9a-f]{8}-hang-\d+-[0-9a-f]{16} growing$/);
      expect(ok).toMatch(/^UNIT prun-task-[0-9a-f]{8}-ok-\d+-[0-9a-f]{16} done$/);
      const stableAt = statSync(join(dir, 'bad.md')).mtimeMs + WINDOW_S * 1000;
      expect(wokeAt - stableAt).toBeLessThan(1000);
    } finally {
      // The hung dispatcher forwards the signal to its agy and publishes its own FALLBACK.
      try {
        process.kill(-pipeline.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await new Promise((resolve) => pipeline.once('close', resolve));
    }
  });

  it.skipIf(!dispatcherReady)(`a SIGKILLed dispatcher: its unit is failed(dispatch-dead), not stalled${dispatcherReady ? '' : ' (skipped: the dispatcher is not built, run pnpm build)'}`, async () => {
    const dir = base();
    writeFileSync(join(dir, 'prompt.txt'), 'Audit section 3\n');
    const callLog = join(dir, 'calls.jsonl');
    const env = cleanEnv({
      HOME: dir,
      TMPDIR: dir,
      ANTIGRAVITY_BIN: fakeAgy,
      AGY_QUOTA_CACHE: join(dir, 'no-quota-snapshot.json'),
      PRUN_AGY_QUOTA_GATE: 'off',
      ANTIGRAVITY_PREFLIGHT: 'off',
      FAKE_AGY_HANG: '1',
      FAKE_AGY_CALL_LOG: callLog,
    });
    const dispatcher = start(dispatcherBin, ['--prompt-file', 'prompt.txt', '--result-file', join(dir, 'killed.md'), '--unit-id', 'killed'], env, {
      cwd: dir,
    });
    const stateDir = (await dispatcher.lineStartingWith('STATE-DIR ')).slice('STATE-DIR '.length);
    // The worker is running (it logs its start first thing), then the dispatcher dies hard.
    await until(() => existsSync(callLog) && readFileSync(callLog, 'utf8').includes('\n'));
    dispatcher.child.kill('SIGKILL');
    await dispatcher.result;
    const r = await run(monitorBin, [stateDir], monitorEnv({ PRUN_MONITOR_POLL: '0' }));
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(`MONITOR-START units=1 stall-threshold=1s timeout=8s\nMONITOR-EVENT fail\nUNIT ${basename(stateDir)} failed(dispatch-dead)\n`);
    expect(existsSync(join(dir, 'killed.md'))).toBe(false);
  });

  it('with state written by unit-state (the same scenario without the dispatcher)', async () => {
    const dir = base();
    const units = ['ok', 'bad', 'hang'].map((unit) => {
      const stateDir = join(dir, `prun-task-00000000-${unit}-1-0123456789abcdef`);
      mkdirSync(stateDir);
      publishAtomic(join(stateDir, STATE_FILES.tail), '{"event": "init"}\n');
      publishAtomic(join(stateDir, STATE_FILES.resultFile), `${join(dir, `${unit}.md`)}\n`);
      publishAtomic(join(stateDir, STATE_FILES.dispatchPid), `${process.pid}\n`);
      return { unit, stateDir, result: join(dir, `${unit}.md`) };
    });
    publishAtomic(units[0]!.result, `${resultHeader('ok')}\nConclusion: complete\n`);
    const monitor = start(monitorBin, ['-'], cleanEnv(monitorSettings));
    // Dispatchers print their STATE-DIR lines and keep the pipe open while they run.
    for (const { stateDir } of units) monitor.child.stdin!.write(formatStateDirLine(stateDir));
    // The FALLBACK lands after the monitor's first look: it then watches the results' directory.
    await untilWatching(monitor.child.pid!, dir);
    publishAtomic(units[1]!.result, renderFallback({ unitId: 'bad', reason: 'Agy exited with code 3' }));
    const r = await monitor.result;
    const stableAt = statSync(units[1]!.result).mtimeMs + WINDOW_S * 1000;
    expect(Date.now() - stableAt).toBeLessThan(1000);
    expect(r.code).toBe(3);
    expect(readFileSync(units[1]!.result, 'utf8').startsWith(fallbackHeader('bad'))).toBe(true);
    expect(r.stdout).toBe(
      [
        'MONITOR-START units=3 stall-threshold=600s timeout=120s',
        'MONITOR-EVENT fail',
        'UNIT prun-task-00000000-ok-1-0123456789abcdef done',
        'UNIT prun-task-00000000-bad-1-0123456789abcdef failed(fallback)',
        'UNIT prun-task-00000000-hang-1-0123456789abcdef growing',
        '',
      ].join('\n'),
    );
  });
});
