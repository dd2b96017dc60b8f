// What a batch's supervisor does on the file system for each unit it hosts, watched with strace
// on the real bins (README, "Benchmarks"): its `stop/` folder is listed when a request may wait
// there, not at every hand-over; the results folder is swept for a killed dispatcher's temps
// once, not at every unit; and every unit's state files are files of its own (no inode shared
// with another unit's), holding their own bytes.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { execa } from 'execa';
import { planUnit, prunBin, sandbox, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const hasStrace = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', 'true']).status === 0;

const UNITS = 6;
// State files whose bytes repeat from unit to unit: each unit still gets its own file.
const REPEATED = ['pre-mtime', 'dispatch-pid', 'runtime', 'isolation', 'model', 'env-withheld'];

it.skipIf(!hasStrace)(
  `hosts unit after unit with stop/ and results/ not listed per unit, every state file its own (strace of the real bin${hasStrace ? '' : '; skipped: strace is missing or may not trace here'})`,
  async () => {
    // A withheld variable, so every unit writes the same `env-withheld`.
    box = sandbox({ PRUN_TEST_TOKEN: 'not for agy' });
    const plan = writePlan(box.root, Array.from({ length: UNITS }, (_, i) => planUnit(`s${i}`)));
    const trace = join(box.root, 'trace');
    const run = await execa('strace', ['-f', '-qq', '-s', '1024', '-e', 'trace=openat,mkdir', '-o', trace, process.execPath, prunBin, 'batch', plan, '--dir', 'fan', '--jobs', '1'], {
      reject: false,
      extendEnv: false,
      env: box.env,
      cwd: box.root,
    });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const tmp = box.env.TMPDIR!;
    const stateDirs = readdirSync(tmp).filter((name) => name.startsWith('prun-task-')).map((name) => join(tmp, name));
    expect(stateDirs).toHaveLength(UNITS);
    const calls = readFileSync(trace, 'utf8').split('\n');
    const fan = join(box.root, 'fan');
    for (const name of REPEATED) {
      // (A call another thread interrupts is traced in two lines: its name and path are in the first.)
      const created = calls.filter((line) => line.includes(`/${name}", O_WRONLY|O_CREAT`));
      expect({ name, created: created.length }).toEqual({ name, created: UNITS });
      // One inode per unit: no unit's file changes with another's.
      expect(new Set(stateDirs.map((dir) => statSync(join(dir, name)).ino)).size, name).toBe(UNITS);
    }
    for (const dir of stateDirs) {
      expect(readFileSync(join(dir, 'pre-mtime'), 'utf8')).toBe('0\n');
      expect(readFileSync(join(dir, 'env-withheld'), 'utf8')).toBe('PRUN_TEST_TOKEN\n');
      expect(readFileSync(join(dir, 'model'), 'utf8')).toMatch(/^\S+\n$/);
      expect(readFileSync(join(dir, 'result-file'), 'utf8')).toMatch(new RegExp(`^${fan}/results/s\\d\\.md\\n$`));
    }
    expect(new Set(stateDirs.map((dir) => readFileSync(join(dir, 'dispatch-pid'), 'utf8'))).size).toBe(1);
    // Folders listed (opened as directories): stop/ at most at the first hand-over (no request
    // came), results/ once for the sweep.
    const listed = (path: string): number => calls.filter((line) => line.includes(`openat(AT_FDCWD, "${path}", `) && line.includes('O_DIRECTORY')).length;
    // The supervisor's folder is gone once the batch has ended: its name is in the trace.
    const supervisors = new Set(calls.flatMap((line) => /^\d+ +mkdir\("[^"]*\/supervisors\/(\d+-\d+)\/stop"/.exec(line)?.[1] ?? []));
    expect(supervisors.size).toBe(1);
    expect(listed(join(fan, 'supervisors', [...supervisors][0]!, 'stop'))).toBeLessThanOrEqual(1);
    expect(listed(join(fan, 'results'))).toBe(1);
  },
  60_000,
);
