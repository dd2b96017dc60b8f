// prun-job beside multi_agent.py on the same workload, measured in the same run: how long
// `run --background`, `steer` and `list` (200 jobs) take, and how big a runner is while a job
// runs. Both drive the same stand-in pi (a shell loop that starts a run and answers steers), so
// the numbers are the tools' own, not pi's. multi_agent.py is taken from $PRUN_ORIGINALS (a
// folder holding it, outside this repository); without it only the rows against bare Node are printed.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const title = 'job-runner vs multi_agent.py: run --background, steer, list of 200 jobs, runner memory (stand-in pi)';

const ORIGINALS = process.env.PRUN_ORIGINALS ?? '';

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
  const haveSeed = existsSync(seedPath);
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
  const tools = [['prun-job', [process.execPath, bin]]];
  if (haveSeed) tools.unshift(['multi_agent.py', ['python3', seedPath]]);
  const call = (tool, args) => execFileSync(tool[0], [...tool.slice(1), ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const rows = {};
  const record = (key, label, ms) => (rows[key] ??= []).push({ label, ms });

  const floor = [
    { label: "node -e '' (floor)", ms: await ctx.measure(() => execFileSync(process.execPath, ['-e', ''])) },
    { label: "python3 -c ''", ms: await ctx.measure(() => execFileSync('python3', ['-c', ''])) },
  ];
  ctx.report(floor);

  let serial = 0;
  for (const [name, tool] of tools) {
    record('run', `${name} run --background`, await ctx.measure(() => call(tool, ['run', '--background', '--name', `bg-${(serial += 1)}`, 'bench']), { runs: 5 }));
    call(tool, ['kill', '--all']);
  }
  for (const [name, tool] of tools) {
    const job = `steered-${name.replace(/\W/g, '')}`;
    call(tool, ['run', '--background', '--name', job, 'bench']);
    record('steer', `${name} steer`, await ctx.measure(() => call(tool, ['steer', job, 'bench steer']), { runs: 7 }));
  }
  const memory = [{ label: 'bare node, idle (floor)', value: bareNodeRssKb() / 1024, unit: 'MiB' }];
  for (const [name] of tools) {
    const pid = runnerOf(join(jobs, `steered-${name.replace(/\W/g, '')}`));
    if (pid !== undefined) memory.push({ label: `${name} runner while a job runs`, value: rssKb(pid) / 1024, unit: 'MiB' });
  }
  call(tools[tools.length - 1][1], ['kill', '--all']);

  for (let i = 0; i < 200; i += 1) {
    const dir = join(jobs, `listed-${String(i).padStart(3, '0')}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ name: `listed-${i}`, profile: 'general-purpose', mode: 'background', parent: null }));
    for (const [file, text] of [['status', 'done\n'], ['exit_code', '0\n'], ['started_at', '2026-01-01T00:00:00Z\n'], ['ended_at', '2026-01-01T00:00:01Z\n'], ['lock', '']]) {
      writeFileSync(join(dir, file), text);
    }
  }
  for (const [name, tool] of tools) record('list', `${name} list --all (200+ jobs)`, await ctx.measure(() => call(tool, ['list', '--all']), { runs: 7 }));

  for (const key of ['run', 'steer', 'list']) ctx.report(rows[key]);
  ctx.report(memory);
  const prunRss = memory.find((m) => m.label.startsWith('prun-job'));
  if (prunRss) process.stdout.write(`  prun-job runner over bare node: ${(prunRss.value - memory[0].value).toFixed(1)} MiB (goal: at most 30)\n`);
  if (!haveSeed) process.stdout.write(`  multi_agent.py not found in ${ORIGINALS || "(PRUN_ORIGINALS unset)"}: set PRUN_ORIGINALS to the folder holding it\n`);

  // The table for the job-runner README: ratios only.
  const ratio = (list) => (list.length === 2 ? `${(list[1].ms / list[0].ms).toFixed(2)}×` : 'n/a');
  const bareRatio = (list) => `${(list[list.length - 1].ms / floor[0].ms).toFixed(2)}×`;
  process.stdout.write('\n  | workload | prun-job / multi_agent.py | prun-job / bare `node -e \'\'` |\n  |---|---|---|\n');
  for (const [key, label] of [['run', '`run --background` returns'], ['steer', '`steer` round trip'], ['list', '`list --all`, 200 jobs']]) {
    process.stdout.write(`  | ${label} | ${ratio(rows[key])} | ${bareRatio(rows[key])} |\n`);
  }
  if (prunRss) {
    const seedRss = memory.find((m) => m.label.startsWith('multi_agent.py'));
    process.stdout.write(`  | runner RSS while a job runs | ${seedRss ? `${(prunRss.value / seedRss.value).toFixed(2)}×` : 'n/a'} | ${(prunRss.value / memory[0].value).toFixed(2)}× |\n`);
  }
}
