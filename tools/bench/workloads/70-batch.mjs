// prun's overhead on a whole fan-out, two ways:
// - speed: a 100-unit batch of instant fake-agy units beside 100 bare fake-agy worker runs at
//   the same concurrency (the floor: the workers themselves), interleaved rounds, medians; and
//   where a batch's CPU goes per unit: the driver, the supervisor (prun's own processes), and
//   the launch chain (perl, unshare, and setpriv where the plan uses it: the dispatcher's isolation) beside the workers;
//   and where its wall time goes per worker (the hand-over from one worker's end to the next
//   one's start, Node's start-up, the worker's own run), from fake agy's FAKE_AGY_TIMES_FILE;
// - memory: a 50-unit batch with all 50 units running (fake agy that never ends), the summed
//   RSS of prun's own processes (the driver, the batch's supervisor and its chain forker, and any
//   dispatcher process), beside the goal of 600 MiB and beside 50 standalone `prun-dispatch-agy` processes
//   running the same units (what the batch cost when every running unit had a dispatcher process
//   of its own). The launch chain (perl, unshare, setpriv) and the workers are printed apart:
//   they are the dispatcher's isolation and the agents themselves, the same in both.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { machineCpuTicks, stealSince } from '../lib.mjs';

export const title = 'prun batch: 100 instant units beside 100 bare fake-agy runs; 50 running units, summed RSS';

const UNITS = Number(process.env.PRUN_BENCH_BATCH_UNITS ?? 100);
const RUNS = Number(process.env.PRUN_BENCH_BATCH_RUNS ?? 3);
const RUNNING = Number(process.env.PRUN_BENCH_BATCH_RUNNING ?? 50);
const GOAL_MIB = 600;

function exec(command, args, options) {
  return new Promise((resolve, reject) => {
    const { input, onChild, ...rest } = options ?? {};
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'ignore'], ...rest });
    onChild?.(child);
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args[1] ?? ''} exited ${code}`))));
    child.stdin.end(input);
  });
}

async function pool(count, jobs, task) {
  let next = 0;
  const workers = Array.from({ length: Math.min(jobs, count) }, async () => {
    while (next < count) {
      const i = next;
      next += 1;
      await task(i);
    }
  });
  await Promise.all(workers);
}

/**
 * CPU milliseconds (user + system) of every waited-for descendant of this process so far
 * (cutime + cstime of /proc/self/stat, clock ticks of 10 ms): a batch's driver waits for its
 * supervisor, which waits for every launch chain and worker, so one batch's delta is all of it.
 */
function childrenCpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of stat(5), counted from the state field (3).
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/**
 * The CPU milliseconds of one process (`self`: utime + stime) and of its waited-for descendants
 * (`children`: cutime + cstime), from /proc/<pid>/stat; null once it is gone.
 */
function cpuOfProcess(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of stat(5), counted from the state field (3); clock ticks of 10 ms.
    return { self: (Number(fields[11]) + Number(fields[12])) * 10, children: (Number(fields[13]) + Number(fields[14])) * 10 };
  } catch {
    return null;
  }
}

/** The pid of `driver`'s batch supervisor (its child running the supervisor bundle), or null. */
function supervisorOf(driver) {
  try {
    for (const pid of readFileSync(`/proc/${driver}/task/${driver}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('bundle-supervise-main')) return Number(pid);
    }
  } catch {
    // gone meanwhile
  }
  return null;
}

/**
 * Run a batch (`exec` of its driver with the child handed to `onChild`) and split its CPU: the
 * driver's own (all waited-for CPU less what the driver waited for), the supervisor's own (its
 * last sample, taken every 20 ms, before it exits), and everything the supervisor waited for
 * (the launch chains and the workers). Sampling two stat files every 20 ms costs the bench
 * process, not the batch.
 */
async function splitBatchCpu(run) {
  let driver = null;
  let supervisor = null;
  let lastDriver = null;
  let lastSupervisor = null;
  const timer = setInterval(() => {
    if (driver === null) return;
    supervisor ??= supervisorOf(driver);
    const d = cpuOfProcess(driver);
    if (d !== null) lastDriver = d;
    const s = supervisor === null ? null : cpuOfProcess(supervisor);
    if (s !== null) lastSupervisor = s;
  }, 20);
  const result = await timed(() => run((child) => (driver = child.pid)));
  clearInterval(timer);
  // The driver has reaped its supervisor (so its children's CPU holds the supervisor's and all
  // below it) before the last sample unless it exited within 20 ms of it: then it is not split.
  if (lastDriver === null || lastSupervisor === null || lastDriver.children === 0) return { ...result, split: null };
  return {
    ...result,
    split: { driver: result.cpuMs - lastDriver.children, supervisor: lastSupervisor.self, chainAndWorkers: lastDriver.children - lastSupervisor.self },
  };
}

/** Wall and CPU milliseconds of `fn`, which must be the only work of this process's children meanwhile. */
async function timed(fn) {
  const start = process.hrtime.bigint();
  const cpu = childrenCpuMs();
  await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, cpuMs: childrenCpuMs() - cpu };
}

/**
 * The stolen share of the machine's CPU during the rounds, when there was any: on a virtual
 * machine whose host runs other guests the rounds vary more, on both sides alike.
 */
function steal(ticks) {
  const percent = Math.round((stealSince(ticks) ?? 0) * 100);
  return percent === 0 ? '' : `; CPU time stolen by the VM's host: ${percent}%`;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * One round's worker times (fake agy's FAKE_AGY_TIMES_FILE: `<process start> <script began>
 * <script ended>` per worker, ms on the same clock in every process), split three ways:
 * - hand-overs: with `jobs` slots, the k-th worker to end frees the slot the (jobs + k)-th to
 *   start takes; from the one's end to the other's process start lie the worker's exit, all
 *   its caller does, and the next spawn (for the floor, a bare spawn; for a batch, the end of
 *   the unit's dispatch, driver and supervisor, and the next unit's launch chain);
 * - start-ups: Node's own, from the process start to the script (both sides run the same);
 * - runs: the worker's script.
 * Start-ups and runs differ between the sides only by the load beside them.
 */
function workerTimes(file, jobs) {
  const workers = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ').map(Number))
    : [];
  const started = workers.map(([start]) => start).sort((a, b) => a - b);
  const ended = workers.map(([, , end]) => end).sort((a, b) => a - b);
  return {
    handOvers: started.slice(jobs).map((start, k) => start - ended[k]),
    startUps: workers.map(([start, began]) => began - start),
    runs: workers.map(([, began, end]) => end - began),
  };
}

/** Every process as `{ pid, ppid, argv, rssKiB }` (Linux /proc). */
function processTable() {
  const table = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${name}/status`, 'utf8'));
      table.push({ pid: Number(name), ppid, argv, rssKiB: rss ? Number(rss[1]) : 0 });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** The processes descending from `roots`, sorted into prun's own, the launch chain and the workers. */
function treeRss(roots) {
  const table = processTable();
  const children = new Map();
  for (const p of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const forkerScript = (p) => p !== undefined && /(^|\/)perl$/.test(p.argv[0] ?? '') && (p.argv[2] ?? '').includes('zserve()');
  const seen = [];
  const stack = table.filter((p) => roots.includes(p.pid));
  while (stack.length > 0) {
    const p = stack.pop();
    seen.push(p);
    stack.push(...(children.get(p.pid) ?? []));
  }
  const groups = { prun: [], chain: [], workers: [] };
  for (const p of seen) {
    // Node processes by their script; anything else (setpriv, perl, unshare) is the launch chain.
    const script = /(^|\/)node$/.test(p.argv[0] ?? '') ? (p.argv[1] ?? '') : null;
    // The supervisor's chain forker is perl, but prun's own: one per batch, not per unit (the
    // chains it forks carry its command line too; their parent is the forker, not the supervisor).
    if (script === null && forkerScript(p) && !forkerScript(byPid.get(p.ppid))) groups.prun.push(p);
    else if (script === null) groups.chain.push(p);
    else if (/fake-agy/.test(script)) groups.workers.push(p);
    else if (/packages\/(prun|dispatcher-agy)\//.test(script)) groups.prun.push(p);
    else groups.chain.push(p);
  }
  const sum = (list) => ({ count: list.length, mib: list.reduce((total, p) => total + p.rssKiB, 0) / 1024 });
  return { prun: sum(groups.prun), chain: sum(groups.chain), workers: sum(groups.workers) };
}

/** Resolves once `count` workers have started (each state dir under `tmp` has its `tail`). */
async function workersStarted(tmp, count) {
  for (;;) {
    const started = readdirSync(tmp).filter((name) => name.startsWith('prun-task-') && existsSync(join(tmp, name, 'tail'))).length;
    if (started >= count) return;
    await new Promise((resolveLater) => setTimeout(resolveLater, 200));
  }
}

/** Let RSS settle after the last start (allocation after start-up), then read it. */
async function settledRss(roots) {
  await new Promise((resolveLater) => setTimeout(resolveLater, 2000));
  return treeRss(roots);
}

/**
 * The speed rows in `env`: rounds of the floor and the batch, interleaved, and what a new file
 * cost in `root` before them (`newFileCost`). `tag` names the environment in the batch's
 * directories and in the printed lines ('' for the README's run).
 */
async function speed(ctx, env, root, tag = '') {
  const jobs = availableParallelism();
  const fakeAgy = env.ANTIGRAVITY_BIN;
  const prunBin = join(ctx.repoRoot, 'packages/prun/bin/prun.js');
  const line = `${JSON.stringify({ event: 'user', message: { content: 'bench' } })}\n`;
  const plan = join(root, 'plan.json');
  writeFileSync(plan, JSON.stringify({ units: Array.from({ length: UNITS }, (_, i) => ({ id: `u${i}`, prompt: `unit ${i}` })) }));
  const floor = [];
  const batch = [];
  const times = { floor: { handOvers: [], startUps: [], runs: [] }, batch: { handOvers: [], startUps: [], runs: [] } };
  // One round of one side, its workers writing their times to a file of the round's own.
  const withTimes = async (side, round, run) => {
    const file = join(root, `times-${side}${tag}-${round}`);
    const sample = await run({ ...env, FAKE_AGY_TIMES_FILE: file });
    for (const [part, values] of Object.entries(workerTimes(file, jobs))) times[side][part].push(...values);
    return sample;
  };
  const ticks = machineCpuTicks();
  const fileCostBefore = newFileCost(root);
  for (let round = 0; round < RUNS; round += 1) {
    floor.push(
      await withTimes('floor', round, (roundEnv) =>
        timed(() =>
          pool(UNITS, jobs, () =>
            exec(fakeAgy, ['--input-format', 'stream-json', '--output-format', 'stream-json', '--model', 'gemini-3.8-flash-high', '--mode', 'plan'], { env: roundEnv, input: line }),
          ),
        ),
      ),
    );
    batch.push(
      await withTimes('batch', round, (roundEnv) =>
        splitBatchCpu((onChild) =>
          exec(process.execPath, [prunBin, 'batch', plan, '--dir', join(root, `batch${tag}-${round}`), '--jobs', String(jobs), '--json'], { env: roundEnv, cwd: root, onChild }),
        ),
      ),
    );
  }
  const fileCostAfter = newFileCost(root);
  const row = (label, samples) => ({ label, ms: median(samples.map((s) => s.ms)), cpuMs: median(samples.map((s) => s.cpuMs)) });
  const suffix = tag === '' ? '' : ` (${tag})`;
  const rows = [row(`${UNITS} bare fake-agy runs, ${jobs} at a time (floor)${suffix}`, floor), row(`prun batch of ${UNITS} instant units, --jobs ${jobs}${suffix}`, batch)];
  ctx.table(rows);
  const cpuRatio = rows[1].cpuMs / rows[0].cpuMs;
  process.stdout.write(
    `  goal: prun batch at most x1.30 the floor (${RUNS} interleaved rounds, medians); CPU (all processes, waited for): x${cpuRatio.toFixed(2)} the floor's; load ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}${steal(ticks)}\n` +
      `  a new file in the state's folder: ${fileCostBefore.toFixed(3)} ms before the rounds, ${fileCostAfter.toFixed(3)} ms after (the floor makes none)\n`,
  );
  const splits = batch.map((sample) => sample.split).filter((split) => split !== null);
  if (splits.length > 0) {
    const perUnit = (pick) => (median(splits.map(pick)) / UNITS).toFixed(1);
    const workers = rows[0].cpuMs / UNITS;
    process.stdout.write(
      `  CPU per unit (medians of ${splits.length}): driver ${perUnit((s) => s.driver)} ms, supervisor ${perUnit((s) => s.supervisor)} ms` +
        ` (prun's own, start-up included); launch chains and workers ${perUnit((s) => s.chainAndWorkers)} ms, of which the bare workers (floor) ${workers.toFixed(1)} ms\n`,
    );
  }
  if (times.floor.handOvers.length > 0 && times.batch.handOvers.length > 0) {
    // Each slot runs UNITS / jobs workers one after another, so a per-worker difference adds
    // that many times over to the batch's wall time.
    const serial = UNITS / jobs;
    const part = (name, key) => {
      const floorMs = median(times.floor[key]);
      const batchMs = median(times.batch[key]);
      return `${name} ${floorMs.toFixed(1)} / ${batchMs.toFixed(1)} ms (${((batchMs - floorMs) * serial).toFixed(0)} ms of wall)`;
    };
    process.stdout.write(
      `  per worker, floor / batch (fake agy's own clock, medians of ${times.batch.handOvers.length} hand-overs): ${part('hand-over, one worker\'s end to the next one\'s process start', 'handOvers')};` +
        ` ${part('Node start-up', 'startUps')}; ${part('the worker\'s own run', 'runs')}\n`,
    );
  }
  return { rows, fileCost: fileCostBefore };
}

/**
 * Milliseconds per new empty file in a fresh folder under `dir` (200 of them, left until the
 * bench's end): what each of a batch's new files costs there now. On ext4 without a journal
 * a new file skips every inode deleted in its block group in the last minute or more (the
 * kernel's recently_deleted(): RECENTCY_MIN 60 s, 300 s more while the inode's table block is
 * not yet written back), one buffer lookup each, so this moves with what was deleted nearby in
 * the minutes before, not with prun.
 */
function newFileCost(dir) {
  const folder = mkdtempSync(join(dir, 'new-file-cost-'));
  const count = 200;
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i += 1) writeFileSync(join(folder, String(i)), '');
  return Number(process.hrtime.bigint() - start) / 1e6 / count;
}

async function memory(ctx, env, root) {
  const prunBin = join(ctx.repoRoot, 'packages/prun/bin/prun.js');
  const dispatcherBin = join(ctx.repoRoot, 'packages/dispatcher-agy/bin/prun-dispatch-agy.js');
  const hangEnv = { ...env, FAKE_AGY_HANG: '1' };
  const units = Array.from({ length: RUNNING }, (_, i) => ({ id: `r${i}`, prompt: `running unit ${i}` }));

  // prun batch: all units running at once.
  const tmpBatch = join(root, 'tmp-batch');
  mkdirSync(tmpBatch);
  const plan = join(root, 'plan-running.json');
  writeFileSync(plan, JSON.stringify({ units }));
  const driver = spawn(process.execPath, [prunBin, 'batch', plan, '--dir', join(root, 'batch-running'), '--jobs', String(RUNNING)], {
    env: { ...hangEnv, TMPDIR: tmpBatch },
    cwd: root,
    stdio: 'ignore',
  });
  const driverDone = new Promise((resolveExit) => driver.on('exit', resolveExit));
  await workersStarted(tmpBatch, RUNNING);
  const batch = await settledRss([driver.pid]);
  driver.kill('SIGTERM');
  await driverDone;

  // What it cost before: one standalone dispatcher process per running unit.
  const tmpAlone = join(root, 'tmp-alone');
  mkdirSync(tmpAlone);
  mkdirSync(join(root, 'alone'));
  const alone = units.map((unit) => {
    const prompt = join(root, 'alone', `${unit.id}.md`);
    writeFileSync(prompt, unit.prompt);
    const child = spawn(process.execPath, [dispatcherBin, `--prompt-file=${prompt}`, `--result-file=${join(root, 'alone', `${unit.id}.result.md`)}`, `--unit-id=${unit.id}`], {
      env: { ...hangEnv, TMPDIR: tmpAlone },
      cwd: root,
      stdio: 'ignore',
      detached: true,
    });
    return { child, done: new Promise((resolveExit) => child.on('exit', resolveExit)) };
  });
  await workersStarted(tmpAlone, RUNNING);
  const standalone = await settledRss(alone.map(({ child }) => child.pid));
  for (const { child } of alone) child.kill('SIGTERM');
  await Promise.all(alone.map(({ done }) => done));

  const show = (label, tree) => {
    process.stdout.write(
      `  ${label.padEnd(44)} prun's own: ${String(tree.prun.count).padStart(3)} processes ${tree.prun.mib.toFixed(0).padStart(5)} MiB` +
        `   launch chain: ${tree.chain.count} / ${tree.chain.mib.toFixed(0)} MiB   workers: ${tree.workers.count} / ${tree.workers.mib.toFixed(0)} MiB\n`,
    );
  };
  show(`prun batch, ${RUNNING} units running`, batch);
  show(`${RUNNING} standalone prun-dispatch-agy`, standalone);
  ctx.report([
    { label: `goal for ${RUNNING} running units`, value: GOAL_MIB, unit: 'MiB' },
    { label: `prun batch: summed RSS of prun's own processes`, value: batch.prun.mib, unit: 'MiB' },
    { label: `${RUNNING} standalone dispatcher processes (before)`, value: standalone.prun.mib, unit: 'MiB' },
  ]);
  return { batch, standalone };
}

/** The type of the file system holding `path` (the longest mount point in /proc/mounts above it), or null. */
function fsTypeOf(path) {
  let best = null;
  try {
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, point, type] = line.split(' ');
      if (point === undefined || type === undefined) continue;
      const under = point === '/' || path === point || path.startsWith(`${point}/`);
      if (under && (best === null || point.length >= best.point.length)) best = { point, type };
    }
  } catch {
    return null;
  }
  return best?.type ?? null;
}

export async function run(ctx) {
  const root = ctx.tempDir();
  const env = {
    ...process.env,
    HOME: root,
    TMPDIR: root,
    ANTIGRAVITY_BIN: join(ctx.repoRoot, 'tools/fake-agy/fake-agy'),
    ANTIGRAVITY_PREFLIGHT: 'off',
    PRUN_AGY_QUOTA_GATE: 'off',
  };
  // No FAKE_AGY_RESPONSE: fake agy then answers in the return contract with the unit's own id
  // (from the relayed prompt), so every unit is done, as a real batch's would be.
  delete env.FAKE_AGY_RESPONSE;
  // Every Node process, each fake agy worker included, loads NODE_EXTRA_CA_CERTS's certificates
  // at its start when the variable is set (this project's machines set it; about 90 ms of CPU
  // here): that adds the same cost to every worker on both sides and so flatters the ratio. The
  // README's rows are measured with it unset on both sides, as on most users' machines; where it
  // is set, the ratio as given is measured too and printed beside them.
  const unset = { ...env };
  delete unset.NODE_EXTRA_CA_CERTS;
  const { rows, fileCost } = await speed(ctx, unset, root);
  const caSet = env.NODE_EXTRA_CA_CERTS ? (await speed(ctx, env, root, 'NODE_EXTRA_CA_CERTS set')).rows : null;
  // Where the state lives moves prun's side only (the floor writes no file): ext4 without a
  // journal, as on this project's machines, makes every new inode skip the ones deleted nearby in
  // the last minutes (`newFileCost`), which journaled ext4, xfs or tmpfs do not. The same rounds
  // with the batch directory, the state directories and HOME on tmpfs tell that part apart.
  const rootFs = fsTypeOf(root);
  const shm = rootFs !== 'tmpfs' && fsTypeOf('/dev/shm') === 'tmpfs' ? mkdtempSync('/dev/shm/prun-bench-batch-') : null;
  let onTmpfs = null;
  try {
    if (shm !== null) onTmpfs = (await speed(ctx, { ...unset, HOME: shm, TMPDIR: shm }, shm, 'state on tmpfs')).rows;
  } finally {
    if (shm !== null) rmSync(shm, { recursive: true, force: true });
  }
  const ratios = (pair) => `wall ×${(pair[1].ms / pair[0].ms).toFixed(2)}, CPU ×${(pair[1].cpuMs / pair[0].cpuMs).toFixed(2)}`;
  const { batch, standalone } = await memory(ctx, unset, root);
  ctx.record('prun', {
    title: `prun batch: ${UNITS} instant units beside ${UNITS} bare fake-agy runs at the same concurrency`,
    rows,
    note:
      `Both sides ran with NODE_EXTRA_CA_CERTS unset${caSet === null ? '' : ` (with it set, as this machine has it, which adds the same start-up cost to every worker: ${ratios(caSet)})`}` +
      ` and with ANTIGRAVITY_PREFLIGHT=off and PRUN_AGY_QUOTA_GATE=off: with the preflight on, as by default, each unit also runs \`agy --version\` and \`agy models\` before its worker. ` +
      `The batch's state was on ${rootFs ?? 'an unknown file system'}, where a new file took ${fileCost.toFixed(3)} ms before the rounds` +
      `${onTmpfs === null ? '' : ` (the same rounds with it on tmpfs: ${ratios(onTmpfs)}; ext4 without a journal makes every new file skip the inodes deleted nearby in the last minutes, see tools/bench/README.md)`}. ` +
      `With ${RUNNING} units running (fake agy that never ends), prun's own processes (the driver, the batch's supervisor and its chain forker: ${batch.prun.count} processes) sum to ${batch.prun.mib.toFixed(0)} MiB of RSS (goal: at most ${GOAL_MIB} MiB); ${RUNNING} standalone dispatcher processes running the same units: ${standalone.prun.mib.toFixed(0)} MiB.`,
  });
}
