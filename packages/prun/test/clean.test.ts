// `prun clean` and `prun-report-state --batch` as the user guide types them: from a scratch
// working directory, relative DIRs, real batches run by the built prun against tools/fake-agy.
// Each test asserts what a careless clean would get wrong: removing a live unit's state, a unit
// without its result, something outside the batch, following a symlink, removing on --dry-run,
// removing before the snapshot exists.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { appendLedger, type LedgerEntry } from '@prun/unit-state/ledger';
import { afterEach, describe, expect, it } from 'vitest';
import { ledger, openGate, prun, repoRoot, sandbox, waitFor, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
let openAtEnd: string[] = [];
afterEach(async () => {
  // A held worker is let go, so no dispatcher outlives its test.
  for (const gate of openAtEnd) if (box) openGate(box, gate);
  openAtEnd = [];
  box?.cleanup();
  box = undefined;
});

const unit = (id: string, markers = '', extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id,
  prompt: `UNIT-ID:${id} do the work ${markers}`,
  model: 'fake-model-x', // outside both quota groups: never gated
  ...extra,
});

/** A sandbox with a scratch working directory `work/` holding `plan.json` (and more plans by name). */
function scratch(plans: Record<string, unknown[]>): { box: Sandbox; work: string } {
  box = sandbox();
  const work = join(box.root, 'work');
  mkdirSync(work);
  for (const [name, units] of Object.entries(plans)) writeFileSync(join(work, name), JSON.stringify({ units }));
  return { box, work };
}

interface Line {
  id: string;
  status: string;
  state_dir: string | null;
  clone_dir?: string | null;
  dispatcher_pid?: number;
}

const lines = (dir: string): Line[] => ledger(dir) as unknown as Line[];
const stateDirsOf = (dir: string, id: string): string[] => [...new Set(lines(dir).filter((l) => l.id === id && l.state_dir).map((l) => l.state_dir!))];

/** Apparent bytes of everything in a tree but its directories, counted by find(1), not by prun. */
function findBytes(path: string): number {
  const out = spawnSync('find', [path, '!', '-type', 'd', '-printf', '%s\\n'], { encoding: 'utf8' });
  return out.stdout.split('\n').filter(Boolean).reduce((sum, n) => sum + Number(n), 0);
}

async function runBatch(work: string, plan: string, dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const run = await prun(['batch', plan, '--dir', dir, '--jobs', '2'], { env, cwd: work });
  expect(run.exitCode, String(run.stderr)).toBe(0);
}

describe('prun clean', () => {
  it('--dry-run lists what would go with its bytes and removes nothing; the real run removes exactly that, and nothing outside the batch', async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a'), unit('b')], 'other.json': [unit('a')] });
    await runBatch(work, 'plan.json', 'fan', box.env);
    await runBatch(work, 'other.json', 'other', box.env);
    const fan = join(work, 'fan');
    const mine = [...stateDirsOf(fan, 'a'), ...stateDirsOf(fan, 'b')];
    const theirs = stateDirsOf(join(work, 'other'), 'a');
    expect(mine).toHaveLength(2);
    // Something else of the user's beside the state dirs, named like one.
    const stray = join(box.env.TMPDIR!, 'prun-task-00000000-a-1-0123456789abcdef');
    mkdirSync(stray);
    writeFileSync(join(stray, 'keep'), 'mine');

    const dry = await prun(['clean', 'fan', '--dry-run', '--json'], { env: box.env, cwd: work });
    expect(dry.exitCode, String(dry.stderr)).toBe(0);
    const planned = JSON.parse(String(dry.stdout)) as { dry_run: boolean; bytes: number; removed: Array<{ path: string; bytes: number }> };
    expect(planned.dry_run).toBe(true);
    expect(planned.removed.map((r) => r.path).sort()).toEqual([...mine].sort());
    for (const r of planned.removed) {
      expect(r.bytes).toBe(findBytes(r.path));
      expect(r.bytes).toBeGreaterThan(0);
    }
    expect(planned.bytes).toBe(planned.removed.reduce((sum, r) => sum + r.bytes, 0));
    for (const dir of mine) expect(existsSync(dir), dir).toBe(true);
    const dryText = await prun(['clean', 'fan', '--dry-run'], { env: box.env, cwd: work });
    expect(String(dryText.stdout)).toMatch(/^would remove a state dir .* \([\d,]+ bytes\)$/m);
    expect(String(dryText.stdout)).toMatch(/would remove 2 state dirs and 0 clones/);
    for (const dir of mine) expect(existsSync(dir), dir).toBe(true);

    const real = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(real.exitCode, String(real.stderr)).toBe(0);
    expect(String(real.stdout)).toMatch(/removed 2 state dirs and 0 clones/);
    for (const dir of mine) expect(existsSync(dir), dir).toBe(false);
    for (const dir of theirs) expect(existsSync(dir), dir).toBe(true);
    expect(readFileSync(join(stray, 'keep'), 'utf8')).toBe('mine');
    // The batch's own files stay: results, ledger, logs.
    expect(readFileSync(join(fan, 'results', 'a.md'), 'utf8')).toMatch(/^# a result/);
    // Twice is harmless: nothing left to remove.
    const again = await prun(['clean', 'fan', '--json'], { env: box.env, cwd: work });
    expect(again.exitCode).toBe(0);
    expect((JSON.parse(String(again.stdout)) as { removed: unknown[] }).removed).toEqual([]);
  }, 90_000);

  it('keeps a unit without its result file, and a recorded path that is not provably this batch\'s state dir', async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a'), unit('b'), unit('c')] });
    await runBatch(work, 'plan.json', 'fan', box.env);
    const fan = join(work, 'fan');
    rmSync(join(fan, 'results', 'b.md'));
    // A forged line pointing unit c at a folder of the user's: never removed.
    const precious = join(box.root, 'precious');
    mkdirSync(precious);
    writeFileSync(join(precious, 'data'), 'x');
    const last = JSON.parse(readFileSync(join(fan, 'ledger.jsonl'), 'utf8').trim().split('\n').filter((l) => l.includes('"id":"c"')).at(-1)!) as LedgerEntry;
    const cDir = last.state_dir!;
    appendLedger(join(fan, 'ledger.jsonl'), { ...last, state_dir: precious });
    // ...and one at a state-dir-named folder whose result-file names another batch's result.
    const foreign = join(box.env.TMPDIR!, 'prun-task-00000000-c-2-0123456789abcdef');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'result-file'), '/elsewhere/results/c.md\n');
    appendLedger(join(fan, 'ledger.jsonl'), { ...last, state_dir: foreign });

    const run = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const out = String(run.stdout);
    expect(stateDirsOf(fan, 'a').every((dir) => !existsSync(dir))).toBe(true);
    for (const dir of stateDirsOf(fan, 'b')) {
      expect(existsSync(dir), dir).toBe(true);
      expect(out).toContain(`kept b state dir ${dir}: the unit has no result file`);
    }
    expect(existsSync(cDir)).toBe(false); // c's real state dir was its own, and c settled
    expect(readFileSync(join(precious, 'data'), 'utf8')).toBe('x');
    expect(out).toContain(`kept c state dir ${precious}: the recorded path is not named as a state dir of unit c`);
    expect(existsSync(join(foreign, 'result-file'))).toBe(true);
    expect(out).toContain(`kept c state dir ${foreign}: its result-file names /elsewhere/results/c.md, not this batch's result`);
  }, 90_000);

  it('never follows a symlink: one inside a state dir is removed as a link, a state dir that is a link is kept', async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a'), unit('b')] });
    await runBatch(work, 'plan.json', 'fan', box.env);
    const fan = join(work, 'fan');
    const outside = join(box.root, 'outside');
    mkdirSync(join(outside, 'tree'), { recursive: true });
    writeFileSync(join(outside, 'file'), 'keep me');
    writeFileSync(join(outside, 'tree', 'inner'), 'keep me too');
    const [aDir] = stateDirsOf(fan, 'a');
    symlinkSync(join(outside, 'file'), join(aDir!, 'link-to-file'));
    symlinkSync(join(outside, 'tree'), join(aDir!, 'link-to-tree'));
    // b's state dir swapped for a symlink to a copy elsewhere.
    const [bDir] = stateDirsOf(fan, 'b');
    const moved = join(box.root, 'moved-b');
    spawnSync('mv', [bDir!, moved]);
    symlinkSync(moved, bDir!);

    const dry = await prun(['clean', 'fan', '--dry-run', '--json'], { env: box.env, cwd: work });
    const planned = JSON.parse(String(dry.stdout)) as { removed: Array<{ path: string; bytes: number }> };
    // The links count as links (their own length), not as what they point at.
    expect(planned.removed.find((r) => r.path === aDir)?.bytes).toBe(findBytes(aDir!));

    const run = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(existsSync(aDir!)).toBe(false);
    expect(readFileSync(join(outside, 'file'), 'utf8')).toBe('keep me');
    expect(readFileSync(join(outside, 'tree', 'inner'), 'utf8')).toBe('keep me too');
    expect(lstatSync(bDir!).isSymbolicLink()).toBe(true);
    expect(readdirSync(moved)).toContain('tail');
    expect(String(run.stdout)).toContain(`kept b state dir ${bDir}: it is a symlink (never followed)`);
  }, 90_000);

  it('--snapshot archives each tail before its state dir goes', async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a')] });
    await runBatch(work, 'plan.json', 'fan', box.env);
    const fan = join(work, 'fan');
    const [aDir] = stateDirsOf(fan, 'a');
    const tail = readFileSync(join(aDir!, 'tail'));
    expect(tail.length).toBeGreaterThan(0);
    const run = await prun(['clean', 'fan', '--snapshot', '--json'], { env: box.env, cwd: work });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    const result = JSON.parse(String(run.stdout)) as { removed: Array<{ path: string; snapshot: string }> };
    expect(result.removed).toHaveLength(1);
    const archive = result.removed[0]!.snapshot;
    expect(archive.startsWith(join(box.env.HOME!, '.local', 'state'))).toBe(true);
    expect(existsSync(aDir!)).toBe(false);
    // The archive holds the tail as it was, byte for byte (read by an independent unzip).
    const unzip = spawnSync('unzip', ['-p', archive, 'tail.bin']);
    if (unzip.error) {
      console.warn('unzip not installed: the archive content check is skipped');
      return;
    }
    expect(Buffer.compare(unzip.stdout, tail)).toBe(0);
    const manifest = JSON.parse(spawnSync('unzip', ['-p', archive, 'manifest.json'], { encoding: 'utf8' }).stdout) as { source_path: string };
    expect(manifest.source_path).toBe(join(aDir!, 'tail'));
  }, 90_000);

  it("never removes a live unit's state: refuses while a driver runs (101), keeps a running unit after the driver is killed, and keeps a unit the ledger calls settled while its dispatcher still runs", async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a'), unit('live', '[[gate hold]]')] });
    openAtEnd.push('hold');
    const fan = join(work, 'fan');
    const driver = prun(['batch', 'plan.json', '--dir', 'fan', '--jobs', '2'], { env: box.env, cwd: work });
    await waitFor(() => existsSync(join(fan, 'ledger.jsonl')) && lines(fan).some((l) => l.id === 'a' && l.status === 'done') && lines(fan).some((l) => l.id === 'live' && l.dispatcher_pid !== undefined && l.state_dir !== null), 'a done and live running, its state dir recorded');
    const aDirs = stateDirsOf(fan, 'a');

    const busy = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(busy.exitCode).toBe(101);
    expect(String(busy.stderr).trim().split('\n')).toHaveLength(1);
    expect(String(busy.stderr)).toMatch(/is being driven by prun pid \d+/);
    const busyDry = await prun(['clean', 'fan', '--dry-run'], { env: box.env, cwd: work });
    expect(busyDry.exitCode).toBe(101);
    for (const dir of aDirs) expect(existsSync(dir)).toBe(true);

    driver.kill('SIGKILL');
    await driver;
    const [liveDir] = stateDirsOf(fan, 'live');
    await waitFor(() => existsSync(join(liveDir!, 'result-file')), "the live unit's result-file entry");
    const run = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(existsSync(liveDir!)).toBe(true);
    expect(String(run.stdout)).toContain(`kept live state dir ${liveDir}: the unit is running, not settled`);
    for (const dir of aDirs) expect(existsSync(dir)).toBe(false);

    // A ledger that says settled, a result in place, but the dispatcher is alive: still kept.
    const last = JSON.parse(readFileSync(join(fan, 'ledger.jsonl'), 'utf8').trim().split('\n').filter((l) => l.includes('"id":"live"')).at(-1)!) as LedgerEntry;
    const { dispatcher_pid: _pid, dispatcher_start: _start, ...settled } = last;
    appendLedger(join(fan, 'ledger.jsonl'), { ...settled, status: 'done', ended_at: new Date().toISOString(), exit_code: 0 });
    writeFileSync(join(fan, 'results', 'live.md'), '# live result\nConclusion: complete\n');
    const again = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(existsSync(liveDir!)).toBe(true);
    expect(String(again.stdout)).toContain(`kept live state dir ${liveDir}: the unit's dispatcher is still running`);
  }, 90_000);

  it('--clones removes the batch\'s own throwaway clones of settled units, and only with --clones', async () => {
    box = sandbox();
    const work = join(box.root, 'work');
    const repo = join(box.root, 'repo');
    mkdirSync(work);
    mkdirSync(repo);
    const git = (args: string[]): void => void spawnSync('git', args, { cwd: repo, env: { ...box!.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
    git(['init', '-q']);
    writeFileSync(join(repo, 'f'), 'x');
    git(['add', 'f']);
    git(['commit', '-qm', 'f']);
    writeFileSync(join(work, 'plan.json'), JSON.stringify({ units: [unit('c', '', { clone: '../repo' })] }));
    await runBatch(work, 'plan.json', 'fan', box.env);
    const clone = join(work, 'fan', 'clones', 'c');
    expect(existsSync(join(clone, 'f'))).toBe(true);
    const without = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(without.exitCode, String(without.stderr)).toBe(0);
    expect(existsSync(clone)).toBe(true);
    const dry = await prun(['clean', 'fan', '--clones', '--dry-run'], { env: box.env, cwd: work });
    expect(String(dry.stdout)).toContain(`would remove c clone ${clone} (`);
    expect(existsSync(clone)).toBe(true);
    const run = await prun(['clean', 'fan', '--clones'], { env: box.env, cwd: work });
    expect(run.exitCode, String(run.stderr)).toBe(0);
    expect(existsSync(clone)).toBe(false);
    expect(readFileSync(join(repo, 'f'), 'utf8')).toBe('x');
  }, 90_000);

  it('bad input: one line and a documented exit code, nothing removed', async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a')] });
    const missing = await prun(['clean'], { env: box.env, cwd: work });
    expect(missing.exitCode).toBe(2);
    expect(String(missing.stderr).trim().split('\n')).toHaveLength(1);
    mkdirSync(join(work, 'empty'));
    const notBatch = await prun(['clean', 'empty'], { env: box.env, cwd: work });
    expect(notBatch.exitCode).toBe(2);
    expect(String(notBatch.stderr)).toBe(`prun: not a batch directory (no plan.json): ${join(work, 'empty')}`);
    // A folder holding a plan of the user's is not a batch either.
    const planOnly = await prun(['clean', '.'], { env: box.env, cwd: work });
    expect(planOnly.exitCode).toBe(2);
    expect(String(planOnly.stderr)).toBe(`prun: not a batch directory (no ledger.jsonl): ${work}`);
    await runBatch(work, 'plan.json', 'fan', box.env);
    const fan = join(work, 'fan');
    const [aDir] = stateDirsOf(fan, 'a');
    writeFileSync(join(fan, 'ledger.jsonl'), `not json\n${readFileSync(join(fan, 'ledger.jsonl'), 'utf8')}`);
    const damaged = await prun(['clean', 'fan'], { env: box.env, cwd: work });
    expect(damaged.exitCode).toBe(102);
    expect(String(damaged.stderr).trim().split('\n')).toHaveLength(1);
    expect(existsSync(aDir!)).toBe(true);
    const unknown = await prun(['clean', 'fan', '--bogus'], { env: box.env, cwd: work });
    expect(unknown.exitCode).toBe(2);
    expect(existsSync(aDir!)).toBe(true);
  }, 90_000);
});

describe('prun-report-state --batch', () => {
  it("lists only that batch's recorded state dirs, through prun and through the bin, from a scratch dir", async () => {
    const { box, work } = scratch({ 'plan.json': [unit('a'), unit('b')], 'other.json': [unit('a')] });
    await runBatch(work, 'plan.json', 'fan', box.env);
    await runBatch(work, 'other.json', 'other', box.env);
    mkdirSync(join(box.env.TMPDIR!, 'prun-task-00000000-a-1-0123456789abcdef'));
    const fan = join(work, 'fan');
    const mine = [...stateDirsOf(fan, 'a'), ...stateDirsOf(fan, 'b')].sort();
    const bin = join(repoRoot, 'packages', 'report-state', 'bin', 'prun-report-state.cjs');
    for (const argv of [
      [join(repoRoot, 'packages', 'prun', 'bin', 'prun.js'), 'report-state', '--batch', 'fan', '--json'],
      [bin, '--batch', 'fan', '--json'],
      // Under the default temp root given explicitly: narrowed all the same.
      [bin, '--batch', 'fan', '--root', box.env.TMPDIR!, '--json'],
    ]) {
      const run = spawnSync(process.execPath, argv, { cwd: work, env: box.env, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as { roots: string[]; unit_count: number; units: Array<{ unit: string; result: string }> };
      expect(report.units.map((u) => u.unit).sort()).toEqual(mine);
      expect(report.unit_count).toBe(2);
      expect(report.roots).toEqual([box.env.TMPDIR]);
      expect(report.units.every((u) => u.result === 'present')).toBe(true);
    }
    // Without --batch the same root shows every unit: four.
    const all = spawnSync(process.execPath, [bin, '--json'], { cwd: work, env: box.env, encoding: 'utf8' });
    expect((JSON.parse(all.stdout) as { unit_count: number }).unit_count).toBe(4);
    // Not a batch: one line, exit 2.
    const bad = spawnSync(process.execPath, [bin, '--batch', '.'], { cwd: work, env: box.env, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe(`prun-report-state: --batch: not a batch directory (no ledger.jsonl): ${work}\n`);
  }, 90_000);
});
