// Runs against the real pi and the fake model server: foreground and background runs, wait,
// result, status, list, peek, resume of the same session, and --fork.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fields, SEED, until, useFakeLlm, type RunResult, type World } from './helpers.js';

const { fresh, llm } = useFakeLlm();
const requestsWith = (marker: string) => llm().requests.filter((r) => r.lastUserText.includes(marker));
const hasPython = !spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).error;
// multi_agent.py itself, on the same state as the bin, for the interoperability contract.
function python(w: World, args: string[]): Promise<RunResult> {
  const child = spawn('python3', [SEED, ...args], { cwd: w.cwd, env: w.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe('run in the foreground', () => {
  it('prints the result block, records the run, and every reader agrees', async () => {
    const w = fresh();
    const run = await w.job(['run', '--name', 'fg', '-'], { input: 'hello from stdin\n' });
    expect(run.stderr).toBe('prun-job: started job fg\n');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^ECHO: hello from stdin\n\n--- multi-agent ---\nname: fg\nstatus: done\nprofile: general-purpose\nmodel: fake\/fake-model\nduration_s: \d+\n$/,
    );
    expect(w.read('fg', 'exit_code')).toBe('0\n');
    expect(w.read('fg', 'status')).toBe('done\n');
    expect(w.read('fg', 'output.txt')).toBe('ECHO: hello from stdin\n');
    expect(w.read('fg', 'model')).toBe('fake/fake-model\n');
    expect(w.read('fg', 'prompt.txt')).toBe('hello from stdin');
    expect(w.read('fg', 'append-prompt.md')).toContain('You are the agent fg,');
    expect(JSON.parse(w.read('fg', 'usage.json'))).toMatchObject({ input: expect.any(Number), output: expect.any(Number) });
    expect(JSON.parse(w.read('fg', 'job.json'))).toMatchObject({ name: 'fg', mode: 'foreground', timeout: null, run_kind: 'new', depth: 1, parent: null });

    const result = await w.job(['result', 'fg']);
    expect(result).toMatchObject({ code: 0, stdout: run.stdout });
    const json = await w.job(['result', 'fg', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'fg', status: 'done', model: 'fake/fake-model', output: 'ECHO: hello from stdin' });

    const status = fields((await w.job(['status', 'fg'])).stdout);
    expect(status).toMatchObject({ name: 'fg', status: 'done', mode: 'foreground', runs: '1', exit_code: '0', cwd: w.cwd });
    expect(status.session_file).toMatch(/_fg\.jsonl$/);
    expect(status.session_cmd).toContain('--session-id fg');

    const peek = (await w.job(['peek', 'fg'])).stdout.split('\n').filter(Boolean);
    expect(peek.map((l) => l.slice(9))).toEqual(['run 1 started (foreground)', 'run 1 ended: done']);
    expect(peek[0]).toMatch(/^\d\d:\d\d:\d\d /);
    expect((await w.job(['peek', 'fg', '-n', '1'])).stdout).toMatch(/run 1 ended: done\n$/);

    const list = await w.job(['list']);
    expect(list.stdout).toMatch(/^NAME  STATUS  MODE        PARENT  AGE\nfg    done    foreground  -       \d+s\n$/);
  });

  it('records tool calls in progress and fails with the error of a refused request', async () => {
    const w = fresh();
    const [tool, bad] = await Promise.all([w.job(['run', '--name', 'tool', '[[bash:echo tool-ran]]']), w.job(['run', '--name', 'bad', '[[400]] please'])]);
    expect(tool.code).toBe(0);
    expect(tool.stdout).toMatch(/^TOOL-RESULT: tool-ran\n/);
    expect(w.read('tool', 'progress.log')).toMatch(/ bash echo tool-ran\n/);
    expect(bad.code).toBe(1);
    expect(fields(bad.stdout).status).toBe('failed');
    expect(bad.stdout).toMatch(/^error: .*400/m);
  });
});

/** The pid of a process that has exited (and been reaped): no live writer has it. */
function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  return new Promise((resolve) => child.on('exit', () => resolve(child.pid!)));
}

describe('a writer killed mid-write', () => {
  it("leaves a temporary file that the job's next run removes; a live writer's is kept", async () => {
    const w = fresh();
    expect((await w.job(['run', '--name', 'tmp', 'first-run'])).code).toBe(0);
    // The names writeAtomic (@prun/kit/fs) gives its temporary files: `.<file>.prun-<pid>-<nonce>.tmp`.
    const dead = join(w.jobDir('tmp'), `.status.prun-${await deadPid()}-0123456789abcdef.tmp`);
    const live = join(w.jobDir('tmp'), `.status.prun-${process.pid}-fedcba9876543210.tmp`);
    writeFileSync(dead, 'runn');
    writeFileSync(live, 'runn');
    expect((await w.job(['resume', 'tmp', 'second-run'])).code).toBe(0);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });
});

describe('run in the background', () => {
  it('returns at once; wait times out with exit 2, then reports the end', async () => {
    const w = fresh();
    const start = await w.job(['run', '--background', '--name', 'bg', '--timeout', '120', '[[gate:bg]] [[slow]] bg-marker']);
    expect(start).toMatchObject({ code: 0, stdout: 'job: bg\nstatus: running\ntimeout_s: 120\n', stderr: '' });
    // The reply is held until the checks below are done, so they all see the job running
    // however slow the machine. The runner logs the start first.
    await until(() => w.read('bg', 'progress.log').includes('run 1 started'), 20_000, 'the run to start');
    const [status, statusText, listText, result, short, shortJson] = await Promise.all([
      w.job(['status', 'bg', '--json']),
      w.job(['status', 'bg']),
      w.job(['list']),
      w.job(['result', 'bg']),
      w.job(['wait', 'bg', '--timeout', '0.3']),
      w.job(['wait', 'bg', '--timeout', '0', '--json']),
    ]);
    expect(JSON.parse(status.stdout)).toMatchObject({ name: 'bg', status: 'running', mode: 'background' });
    expect(statusText.stdout).toContain('note: open the session in pi only after the job stops\n');
    expect(listText.stdout).toMatch(/\nbg    running  background  -       \d+s\n$/);
    expect(result).toMatchObject({ code: 1, stderr: 'prun-job: error: job bg is still running; use wait\n' });
    expect(short.code).toBe(2);
    expect(short.stdout).toMatch(/^job: bg\nstatus: running\nwaited_s: 0\.3\nlast_progress: \d\d:\d\d:\d\d run 1 started \(background\)\n$/);
    expect(shortJson.code).toBe(2);
    expect(JSON.parse(shortJson.stdout)).toMatchObject({ name: 'bg', status: 'running', waited_s: 0 });
    llm().openGate('bg');
    const waited = await w.job(['wait', 'bg', '--json']);
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.stdout)).toMatchObject({ name: 'bg', status: 'done', output: expect.stringMatching(/^SLOW-REPLY w1 w2/) });
    const list = JSON.parse((await w.job(['list', '--json'])).stdout) as { name: string; status: string }[];
    expect(list).toEqual([expect.objectContaining({ name: 'bg', status: 'done', mode: 'background' })]);
  });
});

describe('resume and fork', () => {
  it('resume continues the same session; --fork starts from a copy of another conversation', async () => {
    const w = fresh();
    expect((await w.job(['run', '--name', 'conv', 'first-turn-marker'])).code).toBe(0);
    const again = await w.job(['run', '--name', 'conv', 'x']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('prun-job: error: job conv already exists in this project; use `resume conv`');
    const resumed = await w.job(['resume', 'conv', 'second-turn-marker']);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^ECHO: second-turn-marker\n/);
    // The model saw the first turn again: the conversation continued.
    const second = requestsWith('second-turn-marker')[0];
    expect(JSON.stringify(second?.body.messages)).toContain('first-turn-marker');
    expect(w.read('conv', 'runs')).toBe('2\n');
    expect(JSON.parse(w.read('conv', 'job.json'))).toMatchObject({ run_kind: 'resume', mode: 'foreground' });
    expect(w.read('conv', 'progress.log')).toMatch(/run 1 ended: done\n.*run 2 started \(foreground\)\n.*run 2 ended: done\n$/);
    const sessionDir = JSON.parse(w.read('conv', 'job.json')).session_dir as string;
    expect(readdirSync(sessionDir).filter((f) => f.endsWith('_conv.jsonl'))).toHaveLength(1);

    const sessionFile = fields((await w.job(['status', 'conv'])).stdout).session_file as string;
    const forked = await w.job(['run', '--fork', '--name', 'forked', 'fork-turn-marker'], { env: { PI_SESSION_FILE: sessionFile } });
    expect(forked.code).toBe(0);
    const forkRequest = requestsWith('fork-turn-marker')[0];
    expect(JSON.stringify(forkRequest?.body.messages)).toContain('second-turn-marker');
    expect(JSON.parse(w.read('forked', 'job.json'))).toMatchObject({ fork: sessionFile });
    // The original conversation is left as it was.
    expect(readdirSync(sessionDir).filter((f) => f.endsWith('_conv.jsonl'))).toHaveLength(1);
  });
});

const noInterop = !hasPython
  ? 'python3 is not installed'
  : SEED === '' || !existsSync(SEED)
    ? 'PRUN_ORIGINALS does not name a folder holding multi_agent.py'
    : null;
describe.skipIf(noInterop !== null)(`interoperability with multi_agent.py${noInterop ? ` (skipped: ${noInterop})` : ''}`, () => {
  it('python reports a prun-job job identically; prun-job waits on and kills a python job', async () => {
    const w = fresh();
    // multi_agent.py ships no built-in profiles here, so both programs get the same user one.
    mkdirSync(join(w.agentDir, 'agents'), { recursive: true });
    writeFileSync(join(w.agentDir, 'agents', 'general-purpose.md'), '---\ndescription: shared\n---\nBe brief.\n');
    // Both programs start a job at once (one pi start-up of wait instead of two).
    const [ours, started] = await Promise.all([
      w.job(['run', '--name', 'ours', 'interop-marker']),
      python(w, ['run', '--background', '--name', 'theirs', '[[hang]] python-job-marker']),
    ]);
    expect(ours.code).toBe(0);
    expect(started).toMatchObject({ code: 0, stdout: 'job: theirs\nstatus: running\ntimeout_s: 3600\n' });
    for (const args of [['status', 'ours'], ['result', 'ours'], ['wait', 'ours'], ['peek', 'ours']]) {
      const [mine, theirs] = await Promise.all([w.job(args), python(w, args)]);
      expect({ args, code: theirs.code, stdout: theirs.stdout }).toEqual({ args, code: mine.code, stdout: mine.stdout });
    }

    const waited = await w.job(['wait', 'theirs', '--timeout', '0']);
    expect(waited.code).toBe(2);
    expect(waited.stdout).toMatch(/^job: theirs\nstatus: running\nwaited_s: 0\n/);
    const killed = await w.job(['kill', 'theirs']);
    expect(killed).toMatchObject({ code: 0, stdout: 'job: theirs\nstatus: killed\n' });
    expect(fields((await python(w, ['status', 'theirs'])).stdout).status).toBe('killed');
    const [list, pythonList] = await Promise.all([w.job(['list']), python(w, ['list'])]);
    const noAge = (text: string) => text.replace(/ +\d+[smhd]$/gm, '');
    expect(noAge(list.stdout)).toMatch(/\nours +done +foreground +-\n/);
    expect(noAge(list.stdout)).toMatch(/\ntheirs +killed +background +-\n/);
    expect(noAge(pythonList.stdout)).toBe(noAge(list.stdout));
  });
});
