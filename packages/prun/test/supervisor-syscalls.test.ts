// What a batch's supervisor does on the file system for each unit it hosts, watched with strace
// on the real bins (README, "Benchmarks"): the state files whose bytes repeat from unit to unit
// (`pre-mtime`, `dispatch-pid`, `runtime`, `isolation`, `model`, `env-withheld`) are made once and
// hard-linked for every later unit, so each costs no new inode; its `stop/` folder is listed when
// a request may wait there, not at every hand-over; and the results folder is swept for a killed
// dispatcher's temps once, not at every unit. Every unit's files still hold their own bytes.
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
const REPEATED = ['pre-mtime', 'dispatch-pid', 'runtime', 'isolation', 'model', 'env-withheld'];

it.skipIf(!hasStrace)(
  `hosts unit after unit with the repeated state files linked, stop/ and results/ not listed per unit (strace of the real bin${hasStrace ? '' : '; skipped: strace is missing or may not trace here'})`,
  async () => {
    // A withheld variable, so every unit writes the same `env-withheld`.
    box = sandbox({ PRUN_TEST_TOKEN: 'not for agy' });
    const plan = writePlan(box.root, Array.from({ length: UNITS }, (_, i) => planUnit(`s${i}`)));
    const trace = join(box.root, 'trace');
    const run = await execa('strace', ['-f', '-qq', '-s', '1024', '-e', 'trace=openat,link,mkdir', '-o', trace, process.execPath, prunBin, 'batch', plan, '--dir', 'fan', '--jobs', '1'], {
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
      const linked = calls.filter((line) => / link\(/.test(line) && line.includes(`/${name}", "`));
      expect({ name, created: created.length, linked: linked.length }).toEqual({ name, created: 1, linked: UNITS - 1 });
      // One inode for all, each unit's file with the bytes it always had.
      expect(new Set(stateDirs.map((dir) => statSync(join(dir, name)).ino)).size, name).toBe(1);
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
