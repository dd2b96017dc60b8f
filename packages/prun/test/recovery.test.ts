// prun batch's recovery paths as a user takes them, following the user guide word for word: from
// a scratch working directory, with a relative plan and a relative DIR, kill -9, Ctrl-C, a
// second terminal, a damaged ledger, a signal after publication. Workers are tools/fake-agy
// (through the per-prompt fixture); its call log counts worker starts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { latestStatus, ledger, openGate, prun, sandbox, waitFor, workerCalls, workerStarts, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
afterEach(() => {
  box?.cleanup();
  box = undefined;
});

const unit = (id: string, extra: Record<string, unknown> = {}, markers = ''): Record<string, unknown> => ({
  id,
  prompt: `UNIT-ID:${id} do the work ${markers}`,
  model: 'fake-model-x', // outside both quota groups: never gated
  ...extra,
});

/** A sandbox with a scratch working directory `work/` holding `plan.json`. */
function scratch(units: unknown[], extra: NodeJS.ProcessEnv = {}): { box: Sandbox; work: string } {
  box = sandbox(extra);
  const work = join(box.root, 'work');
  mkdirSync(work);
  writeFileSync(join(work, 'plan.json'), JSON.stringify({ units }));
  return { box, work };
}

/** Worker starts per unit, counted before a worker reads its prompt (a worker killed at once counts). */
const callsPerUnit = (logDir: string): Record<string, number> => workerStarts(logDir);

describe('prun batch recovery (scratch cwd, relative paths)', () => {
  it('kill -9 mid-batch, then --resume with a relative DIR finishes every unit with each worker started once; status works from anywhere', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const { box, work } = scratch([
      unit('a'),
      unit('b', {}, '[[gate bc]]'),
      unit('c', {}, '[[gate bc]]'),
      unit('d', { depends_on: ['a'] }, '[[agy DELAY_MS=300]]'),
      unit('e', { depends_on: ['b', 'c'] }),
      unit('f', { depends_on: ['d', 'e'] }),
    ]);
    const dir = join(work, 'fanout');
    const first = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(join(dir, 'ledger.jsonl')) && ledger(dir).some((l) => l.status === 'done') && ledger(dir).some((l) => l.status === 'running'), 'a unit done and another running');
    first.kill('SIGKILL');
    await first;

    // plan.json is self-contained: every stored path is absolute.
    const stored = JSON.parse(readFileSync(join(dir, 'plan.json'), 'utf8')) as { units: Array<{ prompt_file: string }> };
    for (const u of stored.units) expect(isAbsolute(u.prompt_file), u.prompt_file).toBe(true);
    for (const line of ledger(dir)) {
      const l = line as unknown as Record<string, string | null>;
      for (const key of ['prompt_file', 'result_file', 'state_dir', 'clone_dir']) if (l[key]) expect(isAbsolute(l[key]!), `${key} ${l[key]}`).toBe(true);
    }

    // prun status from another directory, with another relative spelling of DIR.
    mkdirSync(join(box.root, 'elsewhere'));
    const status = await prun(['status', '../work/fanout', '--json'], { env: box.env, cwd: join(box.root, 'elsewhere') });
    expect(status.exitCode).toBe(0);
    expect((JSON.parse(String(status.stdout)) as { dir: string }).dir).toBe(dir);

    // The resumed driver adopts the dispatchers still held at the gate, then they finish.
    const resuming = prun(['batch', '--resume', 'fanout', '--jobs', '2', '--json'], { env: box.env, cwd: work });
    await waitFor(() => ledger(dir).some((l) => (l.note ?? '').startsWith('adopted a dispatch still running')), 'an adoption');
    openGate(box, 'bc');
    const resumed = await resuming;
    expect(resumed.stderr).toBe('');
    expect(resumed.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual(Object.fromEntries(ids.map((id) => [id, 'done'])));
    expect(callsPerUnit(box.logDir)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    for (const id of ids) expect(readFileSync(join(dir, 'results', `${id}.md`), 'utf8')).toMatch(new RegExp(`^# ${id} result\\n`));
    // The units in flight at the kill were adopted (their dispatchers were alive), not re-run.
    expect(ledger(dir).some((l) => (l.note ?? '').startsWith('adopted a dispatch still running'))).toBe(true);
    expect(ledger(dir).some((l) => l.status === 'failed')).toBe(false);
  }, 90_000);

  it('refuses a second driver at once with one line naming the holder (exit 101) while prun status still works', async () => {
    const ids = ['p1', 'p2', 'p3', 'p4'];
    const { box, work } = scratch(ids.map((id) => unit(id, {}, '[[gate go]]')));
    const dir = join(work, 'fanout');
    const first = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '4'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && ledger(dir).some((l) => l.status === 'running'), 'the first driver running');

    const [second, retry, fresh, status] = await Promise.all([
      prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work }),
      prun(['batch', '--retry-failed', dir], { env: box.env, cwd: box.root }),
      // A new batch on the same --dir: named as the same holder, not "use --resume" (exit 2).
      prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work }),
      prun(['status', 'fanout'], { env: box.env, cwd: work }),
    ]);
    for (const refused of [second, retry, fresh]) {
      expect(refused.exitCode).toBe(101);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(`prun: ${dir} is being driven by prun pid ${first.pid}; wait for it, or watch it with prun status`);
    }
    expect(status.exitCode).toBe(0);
    expect(String(status.stdout)).toContain(`driven by prun pid ${first.pid}`);
    // A live unit is shown running, never `running(dispatcher gone)`.
    expect(String(status.stdout)).toMatch(/^p\d +running +/m);
    expect(String(status.stdout)).not.toContain('dispatcher gone');

    openGate(box, 'go');
    const done = await first;
    expect(done.exitCode).toBe(0);
    expect(callsPerUnit(box.logDir)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    // The lock dies with its holder: a later --resume is accepted (and has nothing to do).
    const later = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work });
    expect(later.exitCode).toBe(0);
    expect(callsPerUnit(box.logDir)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
  }, 60_000);

  it('two new batches on one --dir at once: one runs, the other is refused, every unit runs once', async () => {
    const ids = ['n1', 'n2'];
    const { box, work } = scratch(ids.map((id) => unit(id)));
    const runs = await Promise.all([0, 1].map(() => prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work })));
    const codes = runs.map((r) => r.exitCode).sort();
    expect(codes[0]).toBe(0);
    expect([2, 101]).toContain(codes[1]);
    expect(callsPerUnit(box.logDir)).toEqual({ n1: 1, n2: 1 });
    // Nothing half-made beside it.
    expect(readdirSync(work).sort()).toEqual(['fanout', 'plan.json']);
  }, 60_000);

  it('two batches started in the same second with the default --dir get directories of their own', async () => {
    const { box, work } = scratch([unit('s1')]);
    const runs = await Promise.all([0, 1, 2].map(() => prun(['batch', 'plan.json', '--json'], { env: box.env, cwd: work })));
    expect(runs.map((r) => r.exitCode)).toEqual([0, 0, 0]);
    const dirs = runs.map((r) => (JSON.parse(String(r.stdout)) as { dir: string }).dir);
    expect(new Set(dirs).size).toBe(3);
    for (const dir of dirs) expect(dir).toMatch(new RegExp(`^${work}/prun-batch-\\d{8}T\\d{6}Z(-\\d+)?$`));
    expect(callsPerUnit(box.logDir)).toEqual({ s1: 3 });
  }, 60_000);

  it.each([
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)('%s (Ctrl-C, a closed terminal) stops running units as interrupted, keeps dependents queued, and --resume alone finishes the batch as a follow-up turn', async (signal, code) => {
    const { box, work } = scratch([unit('slow', {}, '[[agy HANG=1]]'), unit('after', { depends_on: ['slow'] }), unit('quick')]);
    const dir = join(work, 'fanout');
    const run = prun(['batch', 'plan.json', '--dir', 'fanout', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(
      // The worker has read its prompt (calls.jsonl), so its conversation is being recorded.
      () => existsSync(dir) && workerCalls(box.logDir).filter((c) => c.unit === 'slow').length === 1 && ledger(dir).some((l) => l.id === 'slow' && l.status === 'running' && l.state_dir) && latestStatus(dir).quick === 'done',
      'slow running and quick done',
    );
    run.kill(signal);
    const stopped = await run;
    expect(stopped.exitCode).toBe(code);
    expect(latestStatus(dir)).toEqual({ slow: 'interrupted', after: 'queued', quick: 'done' });

    const resumed = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work });
    expect(resumed.exitCode).toBe(0);
    expect(latestStatus(dir)).toEqual({ slow: 'done', after: 'done', quick: 'done' });
    const slowCalls = workerCalls(box.logDir).filter((c) => c.unit === 'slow');
    expect(slowCalls).toHaveLength(2);
    expect(slowCalls[1]!.argv.join(' ')).toContain('--conversation conv-fixed-0001');
    expect(callsPerUnit(box.logDir)).toEqual({ slow: 2, after: 1, quick: 1 });
    // The interrupted attempt's FALLBACK is kept beside the real result.
    expect(readFileSync(join(dir, 'results', 'slow.attempt-1.md'), 'utf8')).toMatch(new RegExp(`^# slow result \\(FALLBACK, [^\\n]*\\nConclusion: INCOMPLETE; [^\\n]*${signal}`));
  }, 60_000);

  it('sets a torn last ledger line aside before appending, and never glues a record onto it', async () => {
    const { box, work } = scratch([unit('t1'), unit('t2', { depends_on: ['t1'] }, '[[gate t2]]')]);
    const dir = join(work, 'fanout');
    const first = prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(dir) && latestStatus(dir).t2 === 'running', 't2 running');
    first.kill('SIGKILL');
    await first;
    const torn = '{"id":"t2","status":"do';
    writeFileSync(join(dir, 'ledger.jsonl'), torn, { flag: 'a' });
    openGate(box, 't2');

    const resumed = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work });
    expect(resumed.exitCode).toBe(0);
    const side = join(dir, 'ledger.jsonl.torn-1');
    expect(String(resumed.stderr)).toBe(`prun: the ledger's last line was torn (a crash mid-write); set it aside in ${side}`);
    expect(readFileSync(side, 'utf8')).toBe(torn);
    const text = readFileSync(join(dir, 'ledger.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.split('\n').filter(Boolean)) expect(() => JSON.parse(line), line).not.toThrow();
    expect(latestStatus(dir)).toEqual({ t1: 'done', t2: 'done' });
    expect(callsPerUnit(box.logDir)).toEqual({ t1: 1, t2: 1 });
  }, 60_000);

  it('stops resume on a bad ledger line before the last, or a missing or empty ledger beside results (exit 102, nothing changed)', async () => {
    const { box, work } = scratch([unit('m1'), unit('m2')]);
    const dir = join(work, 'fanout');
    expect((await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work })).exitCode).toBe(0);
    const path = join(dir, 'ledger.jsonl');
    const good = readFileSync(path, 'utf8');
    const lines = good.split('\n');
    const snapshot = (): string => createHash('sha256').update(readdirSync(dir, { recursive: true }).sort().join('\n')).digest('hex');

    const cases: Array<[string, string | null, RegExp]> = [
      ['bad middle line', [lines[0], '{"id":"m1" garbage', ...lines.slice(1)].join('\n'), /^prun: ledger line 2 of .*ledger\.jsonl is not a valid entry; nothing was changed/],
      ['empty ledger', '', /^prun: the ledger .*ledger\.jsonl is empty but the batch has results or logs; nothing was changed/],
      ['only a torn line', '{"id":"m1","status":"do', /^prun: the ledger .*ledger\.jsonl holds only a torn line \(23 bytes, no whole entry\) but the batch has results or logs; nothing was changed/],
      ['missing ledger', null, /^prun: the ledger .*ledger\.jsonl is missing but the batch has results or logs; nothing was changed/],
    ];
    for (const [what, content, message] of cases) {
      if (content === null) {
        rmSync(path, { force: true });
      } else {
        writeFileSync(path, content);
      }
      const before = snapshot();
      const bytes = content === null ? null : readFileSync(path, 'utf8');
      for (const args of [['--resume', 'fanout'], ['--retry-failed', 'fanout']]) {
        const refused = await prun(['batch', ...args], { env: box.env, cwd: work });
        expect(refused.exitCode, what).toBe(102);
        expect(String(refused.stderr), what).toMatch(message);
        expect(String(refused.stderr).split('\n'), what).toHaveLength(1);
      }
      expect(snapshot(), what).toBe(before);
      if (bytes !== null) expect(readFileSync(path, 'utf8'), what).toBe(bytes);
      else expect(existsSync(path), what).toBe(false);
    }
    expect(callsPerUnit(box.logDir)).toEqual({ m1: 1, m2: 1 });
  }, 60_000);

  it('a signal reaching a dispatcher after it published its result does not turn a done unit into a failure', async () => {
    const { box, work } = scratch([]);
    const trials = Array.from({ length: 8 }, (_, i) => i);
    const run = async (i: number): Promise<{ status: string; exit: number | null; code: number | null }> => {
      const id = `late${i}`;
      const planName = `plan-${i}.json`;
      writeFileSync(join(work, planName), JSON.stringify({ units: [unit(id)] }));
      const dir = join(work, `fanout-${i}`);
      const results = join(dir, 'results');
      const child = prun(['batch', planName, '--dir', `fanout-${i}`], { env: box.env, cwd: work });
      await waitFor(() => existsSync(results), 'the batch directory');
      // Odd trials signal the batch (which passes SIGTERM on); even trials signal the
      // dispatcher directly, as a coordinator's own kill would.
      const dispatcherPid = (): number | undefined =>
        ledger(dir)
          .map((l) => (l as { dispatcher_pid?: number }).dispatcher_pid)
          .filter((pid) => pid !== undefined)
          .at(-1);
      await new Promise<void>((resolveSent) => {
        let sent = false;
        const check = (): void => {
          if (sent || !existsSync(join(results, `${id}.md`))) return;
          sent = true;
          watcher.close();
          setTimeout(() => {
            try {
              process.kill(i % 2 === 1 ? child.pid! : dispatcherPid()!, 'SIGTERM');
            } catch {
              // already gone: the trial still checks the outcome
            }
            resolveSent();
          }, Math.random() * 4);
        };
        const watcher = watch(results, check);
        check();
      });
      const result = await child;
      const last = ledger(dir).filter((l) => l.id === id).at(-1)!;
      return { status: last.status, exit: last.exit_code, code: result.exitCode ?? null };
    };
    const outcomes = [];
    for (let i = 0; i < trials.length; i += 4) outcomes.push(...(await Promise.all(trials.slice(i, i + 4).map(run))));
    for (const [i, outcome] of outcomes.entries()) {
      expect(outcome.status, `trial ${i}`).toBe('done');
      expect(outcome.exit, `trial ${i}`).toBe(0);
    }
    expect(Object.values(callsPerUnit(box.logDir))).toEqual(trials.map(() => 1));
  }, 90_000);
});

describe('a batch killed while laying its directory out', () => {
  it('leaves no batch; --resume names the half-made layout, and a new batch on that --dir removes it', async () => {
    const { box, work } = scratch([unit('a')]);
    // What a kill -9 between mkdir and the rename into place leaves: a hidden sibling named by
    // the dead prun's pid. (A pid taken from a process that has exited; the live one is kept.)
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const left = join(work, `.fanout.prun-new-${dead.stdout}-0123abcd`);
    const alive = join(work, `.fanout.prun-new-${process.pid}-89abcdef`);
    for (const layout of [left, alive]) {
      mkdirSync(join(layout, 'prompts'), { recursive: true });
      writeFileSync(join(layout, 'plan.json'), '{"units": []}\n');
    }
    const resume = await prun(['batch', '--resume', 'fanout'], { env: box.env, cwd: work });
    expect(resume.exitCode).toBe(2);
    expect(resume.stderr).toBe(
      `prun: not a batch directory (no such directory): ${join(work, 'fanout')}; a prun killed while creating it left .fanout.prun-new-${dead.stdout}-0123abcd beside it, from which nothing ran: start the batch again with prun batch PLAN --dir fanout`,
    );
    const fresh = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: work });
    expect(fresh.exitCode, String(fresh.stderr)).toBe(0);
    expect(existsSync(left)).toBe(false);
    // A layout whose prun is alive may be a batch being created right now: never touched.
    expect(existsSync(alive)).toBe(true);
    expect(readdirSync(work).sort()).toEqual([`.fanout.prun-new-${process.pid}-89abcdef`, 'fanout', 'plan.json']);
  }, 60_000);
});

describe('a copied or moved batch directory', () => {
  it('is refused on --resume (it would drive the original\'s files); the same directory through a symlink is not', async () => {
    const { box, work } = scratch([unit('a'), unit('b', {}, '[[agy EXIT=3]]')]);
    const first = await prun(['batch', 'plan.json', '--dir', 'quick'], { env: box.env, cwd: work });
    expect(first.exitCode).toBe(1);
    expect(spawnSync('cp', ['-r', 'quick', 'copy'], { cwd: work }).status).toBe(0);
    symlinkSync('quick', join(work, 'link'));
    const ledgerBefore = readFileSync(join(work, 'copy', 'ledger.jsonl'), 'utf8');
    const calls = workerCalls(box.logDir).length;

    const copied = await prun(['batch', '--retry-failed', 'copy'], { env: box.env, cwd: work });
    expect(copied.exitCode).toBe(2);
    expect(copied.stderr).toBe(
      `prun: ${join(work, 'copy')} was copied or moved from ${join(work, 'quick')}: its ledger names files there, not here; nothing was changed (resume ${join(work, 'quick')} itself, or start a new batch from ${join(work, 'copy', 'plan.json')})`,
    );
    expect(readFileSync(join(work, 'copy', 'ledger.jsonl'), 'utf8')).toBe(ledgerBefore);
    expect(workerCalls(box.logDir)).toHaveLength(calls);

    const linked = await prun(['batch', '--retry-failed', 'link'], { env: box.env, cwd: work });
    expect(linked.exitCode, String(linked.stderr)).toBe(0);
    expect(latestStatus(join(work, 'quick'))).toEqual({ a: 'done', b: 'done' });
  }, 60_000);
});
