// prun-job beside multi_agent.py on the same workload, measured in the same run, interleaved
// (seed, prun-job, bare Node, seed, prun-job, ...), so a change in the machine's load hits both
// alike: how long `run --background`, `steer` and `list` (200 jobs) take, and how big a runner
// is while a job runs. Both drive the same stand-in pi (a shell loop that starts a run and
// answers steers), so the numbers are the tools' own, not pi's. multi_agent.py is taken from
// originalsDir() (PRUN_BENCH_ORIGINALS or PRUN_ORIGINALS: a folder holding it, outside this repository); without it only the rows
// against bare Node are printed. Goals (issue #15): each command at most 1.5 times the seed's
// time, the runner at most 30 MiB over an idle bare Node.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { originalsDir, runProcess } from '../lib.mjs';

export const title = 'job-runner vs multi_agent.py: run --background, steer, list of 200 jobs, runner memory (stand-in pi)';

const ORIGINALS = originalsDir() ?? '';
const RUNS = Number(process.env.PRUN_BENCH_JOB_RUNS ?? 9);
const GOAL_RATIO = 1.5;
const GOAL_RUNNER_MIB = 30;

// Answers the prompt and every steer as pi does during a run, never settles, ends with its stdin.
const STAND_IN_PI = `#!/bin/sh
while IFS= read -r line; do
  case $line in
    *'"type": "prompt"'*) echo '{"type":"response","id":"prompt","command":"prompt","success":true,"data":{"disposition":"started"}}' ;;
    *'"type": "steer"'*) id=\${line#*'"id": "'}; id=\${id%%'"'*}
      echo '{"type":"response","id":"'"$id"'","command":"steer","success":true,"data":{"disposition":"queued"}}' ;;
  esac
done
`;

function rssKb(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : NaN;
}

/** The pid of the runner of `jobDir` (either program's: both put `__runner JOB_DIR ` in argv). */
function runnerOf(jobDir) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(`__runner ${jobDir} `)) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

/** The RSS of an idle bare Node, the floor for a Node process that only waits. */
function bareNodeRssKb() {
  return Number(execFileSync(process.execPath, ['-e', 'setTimeout(() => console.log(require("fs").readFileSync("/proc/self/status","utf8").match(/VmRSS:\\s+(\\d+)/)[1]), 200)'], { encoding: 'utf8' }));
}

export async function run(ctx) {
  const bin = join(ctx.repoRoot, 'packages', 'job-runner', 'bin', 'prun-job.js');
  const seedPath = join(ORIGINALS, 'multi_agent.py');
  // Only a named folder: a relative multi_agent.py in the current directory is not the seed.
  const haveSeed = ORIGINALS !== '' && existsSync(seedPath);
  const root = ctx.tempDir('prun-bench-jobs-');
  const project = join(root, 'project');
  const agentDir = join(root, 'agent');
  mkdirSync(project, { recursive: true });
  mkdirSync(join(agentDir, 'agents'), { recursive: true });
  // multi_agent.py has no built-in profile; both get ours.
  copyFileSync(join(ctx.repoRoot, 'packages', 'job-runner', 'profiles', 'general-purpose.md'), join(agentDir, 'agents', 'general-purpose.md'));
  const pi = join(root, 'stand-in-pi');
  writeFileSync(pi, STAND_IN_PI, { mode: 0o755 });
  const env = { ...process.env, XDG_STATE_HOME: join(root, 'state'), PI_CODING_AGENT_DIR: agentDir, MULTI_AGENT_PI_BIN: pi, PWD: project };
  const jobs = join(root, 'state', 'pi-multi-agent', project.replace(/[^A-Za-z0-9]/g, '-').replace(/^-+/, ''), 'jobs');
  const tools = [{ name: 'prun-job', command: process.execPath, args: [bin] }];
  if (haveSeed) tools.unshift({ name: 'multi_agent.py', command: 'python3', args: [seedPath] });
  const timed = (tool, args) => runProcess(tool.command, [...tool.args, ...args], { env, cwd: project });
  const call = (tool, args) => execFileSync(tool.command, [...tool.args, ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const floor = { label: "bare `node -e ''` (floor)", run: () => runProcess(process.execPath, ['-e', ''], { env }) };
  const tables = [];

  /** One interleaved comparison: the seed's case first (the baseline of the ratios), then prun-job's, then bare Node. */
  const compare = async (key, title, caseOf) => {
    const cases = [...tools.map((tool) => ({ label: `${tool.name} ${key}`, run: caseOf(tool) })), floor];
    const rows = await ctx.compare(cases, { runs: RUNS, warmup: 1 });
    tables.push({ key, title, rows });
    ctx.table(rows, { rssBaseline: rows.length - 1, readme: 'job-runner', title });
  };

  let serial = 0;
  await compare('run --background', '`run --background` returns', (tool) => () => {
    const name = `bg-${tool.name.replace(/\W/g, '')}-${(serial += 1)}`;
    const sample = timed(tool, ['run', '--background', '--name', name, 'bench']);
    // Not timed: the job goes again, so runners do not pile up over the rounds.
    call(tool, ['kill', name]);
    return sample;
  });

  for (const tool of tools) call(tool, ['run', '--background', '--name', `steered-${tool.name.replace(/\W/g, '')}`, 'bench']);
  await compare('steer', '`steer` round trip', (tool) => () => timed(tool, ['steer', `steered-${tool.name.replace(/\W/g, '')}`, 'bench steer']));

  const bareKb = bareNodeRssKb();
  const memory = [{ label: 'bare node, idle (floor)', ms: null, cpuMs: null, rssMiB: bareKb / 1024 }];
  for (const tool of tools) {
    const pid = runnerOf(join(jobs, `steered-${tool.name.replace(/\W/g, '')}`));
    if (pid !== undefined) memory.push({ label: `${tool.name} runner while a job runs`, ms: null, cpuMs: null, rssMiB: rssKb(pid) / 1024 });
  }
  call(tools[tools.length - 1], ['kill', '--all']);

  for (let i = 0; i < 200; i += 1) {
    const dir = join(jobs, `listed-${String(i).padStart(3, '0')}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ name: `listed-${i}`, profile: 'general-purpose', mode: 'background', parent: null }));
    for (const [file, text] of [['status', 'done\n'], ['exit_code', '0\n'], ['started_at', '2026-01-01T00:00:00Z\n'], ['ended_at', '2026-01-01T00:00:01Z\n'], ['lock', '']]) {
      writeFileSync(join(dir, file), text);
    }
  }
  await compare('list --all', '`list --all`, 200 jobs', (tool) => () => timed(tool, ['list', '--all']));

  ctx.report(memory.map((row) => ({ label: row.label, value: row.rssMiB, unit: 'MiB' })));
  const prunRss = memory.find((m) => m.label.startsWith('prun-job'));
  ctx.record('job-runner', {
    title: 'runner process while a job runs',
    rows: memory,
    note: prunRss ? `Resident memory; the runner is ${(prunRss.rssMiB - memory[0].rssMiB).toFixed(1)} MiB over an idle bare Node (goal: at most ${GOAL_RUNNER_MIB}).` : undefined,
  });

  process.stdout.write('\n  goals (issue #15):\n');
  for (const { title: label, rows } of tables) {
    if (!haveSeed) {
      process.stdout.write(`  ${label}: x${(rows[0].ms / rows.at(-1).ms).toFixed(2)} bare node (no multi_agent.py to compare with)\n`);
      continue;
    }
    const [seed, prun] = rows;
    const wall = prun.ms / seed.ms;
    const cpu = prun.cpuMs && seed.cpuMs ? ` (CPU time x${(prun.cpuMs / seed.cpuMs).toFixed(2)})` : '';
    process.stdout.write(`  ${label}: x${wall.toFixed(2)} multi_agent.py${cpu}, goal <= ${GOAL_RATIO}: ${wall <= GOAL_RATIO ? 'met' : 'NOT met'}\n`);
  }
  if (prunRss) {
    const over = prunRss.rssMiB - memory[0].rssMiB;
    process.stdout.write(`  runner: ${over.toFixed(1)} MiB over an idle bare node, goal <= ${GOAL_RUNNER_MIB}: ${over <= GOAL_RUNNER_MIB ? 'met' : 'NOT met'}\n`);
  }
  if (!haveSeed) process.stdout.write(`  multi_agent.py not found${ORIGINALS ? ` in ${ORIGINALS}` : ''}: set PRUN_BENCH_ORIGINALS (or PRUN_ORIGINALS) to the folder holding it\n`);
}
