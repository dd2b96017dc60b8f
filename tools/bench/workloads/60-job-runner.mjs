// prun-job against the real pi and the fake model server: what the runner adds on top of pi.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makePiEnv, startFakeLlm } from '../../fake-llm/harness.mjs';

export const title = 'job-runner: foreground run beside pi driven directly, steer round trip to the real pi, memory (list: see 61)';

/** pi's own time to answer one prompt: start, prompt, agent_settled, stdin closed, exit. */
function piDirect(env, cwd) {
  return new Promise((resolve, reject) => {
    const pi = spawn(env.MULTI_AGENT_PI_BIN, ['--mode', 'rpc', '--no-session'], { cwd, env, stdio: ['pipe', 'pipe', 'ignore'] });
    let buffer = '';
    pi.stdout.setEncoding('utf8').on('data', (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.includes('"type":"agent_settled"')) pi.stdin.end();
      }
    });
    pi.on('error', reject);
    pi.on('exit', () => resolve());
    pi.stdin.write(`${JSON.stringify({ id: 'prompt', type: 'prompt', message: 'bench echo' })}\n`);
  });
}

function rssKb(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : NaN;
}

function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function run(ctx) {
  const bin = join(ctx.repoRoot, 'packages', 'job-runner', 'bin', 'prun-job.js');
  const llm = await startFakeLlm();
  try {
    const pi = makePiEnv({ port: llm.port, root: ctx.tempDir('prun-bench-job-') });
    const env = { ...pi.env, PWD: pi.cwd };
    // Asynchronous on purpose: the fake model server lives in this process and must keep answering.
    const job = (args) => promisify(execFile)(process.execPath, [bin, ...args], { cwd: pi.cwd, env, encoding: 'utf8' });
    let serial = 0;

    const timedOnce = async (fn) => {
      const start = process.hrtime.bigint();
      await fn();
      return { ms: Number(process.hrtime.bigint() - start) / 1e6 };
    };
    const rows = await ctx.compare(
      [
        { label: 'pi --mode rpc, one echo prompt (floor)', run: () => timedOnce(() => piDirect(env, pi.cwd)) },
        { label: 'prun-job run (foreground, echo)', run: () => timedOnce(() => job(['run', '--name', `fg-${(serial += 1)}`, 'bench echo'])) },
      ],
      { runs: 3, warmup: 1 },
    );
    ctx.table(rows, {
      readme: 'job-runner',
      title: 'a foreground run against the real pi, beside pi driven directly',
      note: "The real pi and tools/fake-llm. The difference is prun-job's own two start-ups (the command and the runner), the job's lock and its state files around pi's run.",
    });

    await job(['run', '--background', '--name', 'steered', '[[hang]] bench']);
    // Let pi start and reach the model, so the steer measures the runner and pi's answer only.
    const until = Date.now() + 60_000;
    while (!llm.requests.some((r) => r.lastUserText.includes('[[hang]] bench')) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const runnerPid = Number(execFileSync('pgrep', ['-f', `__runner ${join(pi.stateHome)}.*/steered `], { encoding: 'utf8' }).trim().split('\n')[0]);
    const piPid = childrenOf(runnerPid)[0];
    const memory = [
      { label: 'pi process, RSS (baseline)', value: rssKb(piPid) / 1024, unit: 'MB' },
      { label: 'prun-job runner, RSS', value: rssKb(runnerPid) / 1024, unit: 'MB' },
    ];

    ctx.report([
      { label: 'node -e 0 (floor)', ms: await ctx.measure(() => execFileSync(process.execPath, ['-e', '0'])) },
      { label: 'prun-job steer (round trip to pi)', ms: await ctx.measure(() => job(['steer', 'steered', 'bench steer'])) },
    ]);
    ctx.report(memory);
    await job(['kill', '--all']);
  } finally {
    await llm.close();
  }
}
