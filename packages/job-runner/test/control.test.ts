// Controlling running jobs against the real pi: steer, abort, timeout, kill and kill --all, a
// runner or a caller killed outright, peek -f, dialogs, retries.
import { mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fields, harness, piOf, until, useFakeLlm, waitForNone } from './helpers.js';

const { fresh, llm } = useFakeLlm();
/** Resolves once the model has been asked the prompt holding marker, i.e. pi is mid-run. */
const modelAsked = (marker: string) =>
  until(() => llm().requests.some((r) => r.lastUserText.includes(marker)), 60_000, `a model request for ${marker}`);

describe('two background jobs: steer one, kill the other', () => {
  it('steer is queued and changes the output; kill stops the other; list shows both', async () => {
    const w = fresh();
    // Both start together (one pi start-up of wait instead of two).
    const started = await Promise.all([
      w.job(['run', '--background', '--name', 'sleeper', '[[hang]] sleeper-marker']),
      w.job(['run', '--background', '--name', 'talker', '[[gate:talker]] [[slow]] talker-marker']),
    ]);
    expect(started.map((r) => r.code)).toEqual([0, 0]);
    // The talker's reply is held until the steer and `list` are done, so both land mid-run
    // however slowly the commands start on a busy machine. The sleeper is not in a hurry.
    await modelAsked('talker-marker');
    const [steer, listed] = await Promise.all([w.job(['steer', 'talker', 'steered-pineapple']), w.job(['list', '--json'])]);
    llm().openGate('talker');
    expect(steer).toMatchObject({ code: 0, stdout: 'job: talker\nsteer: queued\n' });
    const both = JSON.parse(listed.stdout) as { name: string; status: string }[];
    expect(both.map((j) => j.status)).toEqual(['running', 'running']);
    await modelAsked('sleeper-marker');
    expect(piOf(w.jobDir('sleeper'))).toHaveLength(1);
    const kill = await w.job(['kill', 'sleeper']);
    expect(kill).toMatchObject({ code: 0, stdout: 'job: sleeper\nstatus: killed\n' });
    // kill returns only after the runner has stopped pi and exited.
    expect(piOf(w.jobDir('sleeper'))).toHaveLength(0);
    expect(w.read('sleeper', 'progress.log')).toMatch(/stopped by kill\n.*run 1 ended: killed\n$/);
    const waited = await w.job(['wait', 'talker']);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toMatch(/^ECHO: steered-pineapple\n/);
    expect(w.read('talker', 'progress.log')).toContain(' steer: steered-pineapple\n');
    const result = await w.job(['result', 'talker']);
    expect(result.stdout).toBe(waited.stdout);
    const list = (await w.job(['list'])).stdout;
    expect(list).toMatch(/\ntalker +done +background/);
    expect(list).toMatch(/\nsleeper +killed +background/);
    // A finished job cannot be steered, aborted or killed.
    const late = await w.job(['steer', 'talker', 'too late']);
    expect(late).toMatchObject({ code: 1, stderr: 'prun-job: error: job is not running; use resume\n' });
    expect((await w.job(['kill', 'talker'])).stdout).toBe('job: talker\nstatus: done (not running)\n');
  });
});

describe('stopping a run', () => {
  it('abort ends a slow reply as aborted; a timeout ends one as timeout', async () => {
    const w = fresh();
    // The timed-out run goes alongside (one pi start-up of wait instead of two). Its limit
    // counts from the runner's start, so however slowly pi starts, it ends as timeout.
    const timedRun = w.job(['run', '--name', 'to', '--timeout', '1', '[[slow]] timeout-marker']);
    // Its reply is held and never let go, so the run cannot finish before the abort arrives.
    await w.job(['run', '--background', '--name', 'ab', '[[gate:never]] [[slow]] abort-marker']);
    await modelAsked('abort-marker');
    const abort = await w.job(['abort', 'ab']);
    expect(abort).toMatchObject({ code: 0, stdout: 'job: ab\nabort: requested\n' });
    const waited = await w.job(['wait', 'ab']);
    expect(waited.code).toBe(1);
    expect(fields(waited.stdout).status).toBe('aborted');
    expect(w.read('ab', 'progress.log')).toMatch(/abort requested\n.*run 1 ended: aborted\n$/);

    const timed = await timedRun;
    expect(timed.code).toBe(1);
    expect(fields(timed.stdout).status).toBe('timeout');
    expect(w.read('to', 'progress.log')).toMatch(/timeout after 1s; aborting\n/);
  });

  it('kill --all stops every running job of the project', async () => {
    const w = fresh();
    await w.job(['run', '--background', '--name', 'h1', '[[hang]] all-1']);
    await w.job(['run', '--background', '--name', 'h2', '[[hang]] all-2']);
    const kill = await w.job(['kill', '--all']);
    expect(kill.code).toBe(0);
    expect(kill.stdout).toBe('job: h1\nstatus: killed\njob: h2\nstatus: killed\n');
    expect(fields((await w.job(['status', 'h2'])).stdout).status).toBe('killed');
  });

  it('a SIGKILLed runner shows as died, and its pi goes too', async () => {
    const w = fresh();
    await w.job(['run', '--background', '--name', 'victim', '[[hang]] victim-marker']);
    await modelAsked('victim-marker');
    const runners = harness.listProcesses(`__runner ${w.jobDir('victim')} `);
    expect(runners).toHaveLength(1);
    process.kill(runners[0]!.pid, 'SIGKILL');
    let status = '';
    const end = Date.now() + 20_000;
    while (status !== 'died' && Date.now() < end) status = fields((await w.job(['status', 'victim'])).stdout).status ?? '';
    expect(status).toBe('died');
    expect((await w.job(['result', 'victim'])).stdout).toContain('status: died\n');
    // pi sees its stdin close and exits.
    expect(await waitForNone(w.root)).toEqual([]);
  });

  it("the caller's death stops a foreground run: SIGKILL, and SIGTERM with the result still printed", async () => {
    const w = fresh();
    const { child } = w.spawnJob(['run', '--name', 'orphan', '[[hang]] orphan-marker']);
    await modelAsked('orphan-marker');
    expect(piOf(w.jobDir('orphan')).length).toBeGreaterThan(0);
    child.kill('SIGKILL');
    await until(() => w.read('orphan', 'exit_code'), 30_000, 'the run to be recorded');
    expect(w.read('orphan', 'status')).toBe('killed\n');
    expect(w.read('orphan', 'progress.log')).toContain("stopped: the caller's command ended\n");
    expect(await waitForNone(w.root)).toEqual([]);

    const term = w.spawnJob(['run', '--name', 'termed', '[[hang]] termed-marker']);
    await modelAsked('termed-marker');
    term.child.kill('SIGTERM');
    const done = await term.done;
    expect(done.code).toBe(1);
    expect(done.stdout).toMatch(/\nstatus: killed\n/);
  });
});

describe('progress', () => {
  it('peek -f follows until the end; retries and denied dialogs are recorded', async () => {
    const w = fresh();
    mkdirSync(join(w.agentDir, 'extensions'), { recursive: true });
    writeFileSync(
      join(w.agentDir, 'extensions', 'ask.ts'),
      `import { writeFileSync } from 'node:fs';
export default function (pi: any) {
  pi.on('before_agent_start', async (event: any, ctx: any) => {
    if (!String(event.prompt ?? '').includes('[[dialog]]')) return;
    const answer = await ctx.ui.confirm('Allow the probe?', 'The test extension asks.');
    writeFileSync(process.cwd() + '/dialog-answer.txt', JSON.stringify(answer));
  });
}
`,
    );
    await w.job(['run', '--background', '--name', 'flaky', '[[500-once]] [[dialog]] flaky-marker']);
    const follow = await w.job(['peek', 'flaky', '-f']);
    expect(follow.code).toBe(0);
    const lines = follow.stdout.split('\n').filter(Boolean).map((l) => l.slice(9));
    expect(lines[0]).toBe('run 1 started (background)');
    expect(lines).toContain('denied: Allow the probe?');
    expect(lines.some((l) => /^retry 1\/\d+: /.test(l))).toBe(true);
    expect(lines[lines.length - 1]).toBe('run 1 ended: done');
    expect(JSON.parse(readFileSync(join(w.cwd, 'dialog-answer.txt'), 'utf8'))).toBe(false);
    expect(existsSync(join(w.jobDir('flaky'), 'exit_code'))).toBe(true);
  });
});
