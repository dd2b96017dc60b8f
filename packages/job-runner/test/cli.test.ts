// The bin without a real pi: usage, errors, profiles, failing pi start-up, and the lock contract.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, fields, makeWorld, until, type World } from './helpers.js';
import { socketPath } from '../src/index.js';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

function fresh(extra: Record<string, string> = {}): World {
  world = makeWorld(0, extra);
  return world;
}

describe('usage and errors', () => {
  it('prints help with the exit codes, and the version', async () => {
    const w = fresh();
    const help = await w.job(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('prun-job run      [options] (PROMPT | -)');
    expect(help.stdout).toMatch(/64\s+usage error/);
    const version = await w.job(['--version']);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const none = await w.job([]);
    expect(none.code).toBe(64);
    expect(none.stderr).toContain('Usage:');
  });

  it('exits 64 with one clean line for bad commands, options, names and values', async () => {
    const w = fresh();
    const cases: [string[], string][] = [
      [['frobnicate'], 'prun-job: unknown command: frobnicate (try --help)'],
      [['run', '--bogus', 'hi'], 'prun-job: error: unknown option: --bogus'],
      [['run', '--timeout', 'soon', 'hi'], 'prun-job: error: --timeout needs a number of seconds, got: soon'],
      [['run', '--name', 'bad name', 'hi'], "prun-job: error: invalid job name: 'bad name'"],
      [['run', '--name'], 'prun-job: error: --name needs a value'],
      [['run', '   '], 'prun-job: error: empty prompt'],
      [['run', 'a', 'b'], 'prun-job: error: expected one prompt (a string, or - to read stdin)'],
      [['run', '--cwd', '/does/not/exist', 'hi'], 'prun-job: error: --cwd is not a directory: /does/not/exist'],
      [['wait', '-bad-'], 'prun-job: error: unknown option: -bad-'],
      [['status', '.hidden'], "prun-job: error: invalid job name: '.hidden'"],
      [['peek', 'x', '-n', 'many'], 'prun-job: error: -n needs a whole number of lines, got: many'],
      [['kill', 'x', '--all'], 'prun-job: error: kill takes a job name or --all, not both'],
      [['list', 'x'], 'prun-job: error: list takes no job name'],
      [['steer', 'x'], 'prun-job: error: expected one message (a string, or - to read stdin)'],
      [['resume'], 'prun-job: error: resume needs a job name and a prompt'],
    ];
    const results = await Promise.all(cases.map(([args]) => w.job(args)));
    for (const [i, [args, message]] of cases.entries()) {
      const r = results[i]!;
      expect({ args, code: r.code }).toEqual({ args, code: 64 });
      expect(r.stderr.split('\n')[0]).toContain(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).toBe('');
    }
  });

  it('exits 1 for unknown jobs, a refused depth and a missing fork session', async () => {
    const w = fresh();
    const unknown = await w.job(['status', 'nosuch']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('prun-job: error: unknown job: nosuch\n');
    const deep = await w.job(['run', 'hi'], { env: { MULTI_AGENT_DEPTH: '2' } });
    expect(deep.code).toBe(1);
    expect(deep.stderr).toBe('prun-job: error: cannot start an agent: this caller is at depth 2 and MULTI_AGENT_MAX_DEPTH is 2\n');
    const deeper = await w.job(['run', 'hi'], { env: { MULTI_AGENT_DEPTH: '3', MULTI_AGENT_MAX_DEPTH: '3' } });
    expect(deeper.stderr).toContain('at depth 3 and MULTI_AGENT_MAX_DEPTH is 3');
    const fork = await w.job(['run', '--fork', 'hi']);
    expect(fork.code).toBe(1);
    expect(fork.stderr).toBe('prun-job: error: --fork needs PI_SESSION_FILE, which is not set in this environment\n');
    expect((await w.job(['list'])).stdout).toBe('no jobs in this project\n');
    expect((await w.job(['kill', '--all'])).stdout).toBe('no running jobs in this project\n');
  });
});

describe('profiles', () => {
  it('lists built-in, user and project profiles with precedence and disabling', async () => {
    const w = fresh();
    const listed = await w.job(['profiles']);
    expect(listed.stdout).toMatch(/^general-purpose\n  description: .+\n  source: .*profiles\/general-purpose\.md\n$/);
    mkdirSync(join(w.agentDir, 'agents'), { recursive: true });
    mkdirSync(join(w.cwd, '.pi', 'agents'), { recursive: true });
    writeFileSync(join(w.agentDir, 'agents', 'reviewer.md'), '---\nname: reviewer\ndescription: user reviewer\n---\nU\n');
    writeFileSync(join(w.cwd, '.pi', 'agents', 'REVIEWER.md'), '---\nname: Reviewer\ndescription: project\n  reviewer\n---\nP\n');
    writeFileSync(join(w.agentDir, 'agents', 'gp.md'), '---\nname: General-Purpose\nenabled: false\n---\n');
    const merged = await w.job(['profiles']);
    expect(merged.stdout).toBe(`Reviewer\n  description: project\n  source: ${join(w.cwd, '.pi', 'agents', 'REVIEWER.md')}\n`);
    const refused = await w.job(['run', '--profile', 'general-purpose', 'hi']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('prun-job: error: unknown profile: general-purpose (available: Reviewer)\n');
  });
});

describe('a closed stdout', () => {
  it('exits 1 quietly, as the original does on a broken pipe, except after a result block', async () => {
    const w = fresh();
    const done = w.jobDir('finished');
    mkdirSync(done, { recursive: true });
    writeFileSync(join(done, 'job.json'), JSON.stringify({ name: 'finished', profile: 'general-purpose', cwd: w.cwd }));
    writeFileSync(join(done, 'status'), 'done\n');
    writeFileSync(join(done, 'exit_code'), '0\n');
    const withClosedStdout = async (args: string[]) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: w.cwd, env: w.env, stdio: ['ignore', 'pipe', 'pipe'] });
      // Closed long before the bin has started, so its first write meets a pipe nobody reads.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const code = await new Promise((resolve) => child.on('close', resolve));
      return { code, stderr };
    };
    const [profiles, result] = await Promise.all([withClosedStdout(['profiles']), withClosedStdout(['result', 'finished'])]);
    expect(profiles).toEqual({ code: 1, stderr: '' });
    // The job's status decides, as when a signal stopped a foreground run and took its reader.
    expect(result).toEqual({ code: 0, stderr: '' });
  });
});

describe('peek -f reads progress.log through the bounded reader', () => {
  it('a FIFO in place of progress.log is refused, never waited on', async () => {
    const w = fresh();
    const done = w.jobDir('piped');
    mkdirSync(done, { recursive: true });
    writeFileSync(join(done, 'job.json'), JSON.stringify({ name: 'piped', profile: 'general-purpose', cwd: w.cwd }));
    writeFileSync(join(done, 'status'), 'done\n');
    writeFileSync(join(done, 'exit_code'), '0\n');
    // No writer ever opens it: a plain open for reading would block the follower for good.
    expect(spawnSync('mkfifo', [join(done, 'progress.log')]).status).toBe(0);
    const follow = await w.job(['peek', 'piped', '-f']);
    expect(follow).toMatchObject({ code: 0, stdout: '' });
  });
});

describe('a pi that cannot run', () => {
  it('records failed when pi cannot be started, and when it exits at once', async () => {
    const w = fresh();
    const missing = await w.job(['run', '--name', 'nopi', 'hi'], { env: { MULTI_AGENT_PI_BIN: join(w.root, 'no-such-pi') } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(`could not start ${join(w.root, 'no-such-pi')}: no executable file at`);
    expect(fields(missing.stdout).status).toBe('failed');
    expect(w.read('nopi', 'exit_code')).toBe('1\n');
    // As in multi_agent.py, stderr.txt is opened before pi is started, so it exists (empty).
    expect(existsSync(join(w.jobDir('nopi'), 'stderr.txt'))).toBe(true);
    const fake = join(w.root, 'broken-pi');
    writeFileSync(fake, '#!/bin/sh\necho "pi: cannot load its bundle" >&2\nexit 3\n', { mode: 0o755 });
    const broken = await w.job(['run', '--background', '--name', 'broken', 'hi'], { env: { MULTI_AGENT_PI_BIN: fake } });
    expect(broken.code).toBe(0);
    expect(broken.stdout).toBe('job: broken\nstatus: running\ntimeout_s: 3600\n');
    const waited = await w.job(['wait', 'broken']);
    expect(waited.code).toBe(1);
    expect(waited.stdout).toContain('pi exited before the run finished (exit status 3). Last lines of its stderr:\n\npi: cannot load its bundle');
    expect(w.read('broken', 'stderr.txt')).toContain('cannot load its bundle');
    const status = await w.job(['status', 'broken', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ name: 'broken', status: 'failed', mode: 'background', runs: '1', exit_code: '1' });
  });
});

describe('the lock contract', () => {
  it('reports running exactly while another program holds the kernel flock, then died without exit_code', async () => {
    const w = fresh();
    const dir = w.jobDir('handmade');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ name: 'handmade', profile: 'general-purpose', cwd: w.cwd, mode: 'background' }));
    writeFileSync(join(dir, 'status'), 'running\n');
    writeFileSync(join(dir, 'started_at'), '2026-01-01T00:00:00Z\n');
    // util-linux flock stands in for a runner of the other program: it holds the lock until killed
    // (-o keeps the lock descriptor away from its `sleep`).
    const holder = spawn('flock', ['-x', '-o', join(dir, 'lock'), 'sleep', '60'], { stdio: 'ignore' });
    try {
      await until(() => existsSync(join(dir, 'lock')), 5000, 'lock file');
      let status = '';
      await (async () => {
        const end = Date.now() + 10_000;
        while (Date.now() < end) {
          status = fields((await w.job(['status', 'handmade'])).stdout).status ?? '';
          if (status === 'running') break;
        }
      })();
      expect(status).toBe('running');
      const rm = await w.job(['rm', 'handmade'], { env: { MULTI_AGENT_TIME_SCALE: '0.1' } });
      expect(rm.code).toBe(1);
      expect(rm.stderr).toBe('prun-job: error: job handmade is running; kill it first\n');
      const result = await w.job(['result', 'handmade']);
      expect(result.stderr).toBe('prun-job: error: job handmade is still running; use wait\n');
      const waited = await w.job(['wait', 'handmade', '--timeout', '0.2']);
      expect(waited.code).toBe(2);
      expect(waited.stdout).toBe('job: handmade\nstatus: running\nwaited_s: 0.2\n');
    } finally {
      holder.kill('SIGKILL');
    }
    await until(() => holder.exitCode !== null || holder.signalCode !== null, 5000, 'holder exit');
    expect(fields((await w.job(['status', 'handmade'])).stdout).status).toBe('died');
    // As in the original, `wait --timeout inf` means no limit (not a usage error).
    const forever = await w.job(['wait', 'handmade', '--timeout', 'inf']);
    expect(forever.code).toBe(1);
    expect(forever.stdout).toContain('\nname: handmade\nstatus: died\n');
    const list = await w.job(['list', '--all', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ name: 'handmade', status: 'died', mode: 'background' })]);
    expect((await w.job(['rm', 'handmade'])).stdout).toBe('removed: handmade\n');
    expect(existsSync(dir)).toBe(false);
  });
});

describe('a runner that crashes', () => {
  it('records failed and points at runner.log', async () => {
    const w = fresh();
    const dir = w.jobDir('broken-state');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'job.json'), '{ not json');
    writeFileSync(join(dir, 'runs'), '1\n');
    writeFileSync(join(dir, 'status'), 'running\n');
    const runner = spawn(process.execPath, [BIN, '__runner', dir, '3'], { env: w.env, stdio: 'ignore' });
    await new Promise((resolve) => runner.on('exit', resolve));
    expect(readFileSync(join(dir, 'runner.log'), 'utf8')).toContain('has no readable job.json');
    const result = await w.job(['result', 'broken-state']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^the runner failed; see ${join(dir, 'runner.log')}\n\n--- multi-agent ---\nname: broken-state\nstatus: failed\n`));
    expect(w.read('broken-state', 'progress.log')).toMatch(/run 1 ended: failed\n$/);
  });
});

describe('stopping a stubborn pi', () => {
  it('closes stdin, then sends SIGTERM, then SIGKILL', async () => {
    const w = fresh({ MULTI_AGENT_TIME_SCALE: '0.1' });
    const log = join(w.root, 'stubborn.log');
    const stubborn = join(w.root, 'stubborn-pi');
    // Answers the prompt, then ignores both the end of its stdin and SIGTERM, noting each.
    writeFileSync(
      stubborn,
      `#!${process.execPath}
const { appendFileSync } = require('node:fs');
const note = (what) => appendFileSync(${JSON.stringify(log)}, what + '\\n');
process.on('SIGTERM', () => note('TERM'));
process.stdin.on('data', () => {});
process.stdin.on('end', () => note('EOF'));
console.log(JSON.stringify({ type: 'response', id: 'prompt', command: 'prompt', success: true, data: { disposition: 'started' } }));
note('started');
setInterval(() => {}, 1000);
`,
      { mode: 0o755 },
    );
    const started = await w.job(['run', '--background', '--name', 'stubborn', 'hi'], { env: { MULTI_AGENT_PI_BIN: stubborn } });
    expect(started.code).toBe(0);
    await until(() => existsSync(log) && readFileSync(log, 'utf8').includes('started'), 20_000, 'the stand-in pi');
    // The runner's stop sequence runs at the short test scale (about 1.5 s); `kill` waits for it at
    // the normal scale, so a loaded machine cannot make it give up first.
    const kill = await w.job(['kill', 'stubborn'], { env: { MULTI_AGENT_TIME_SCALE: '1' } });
    expect(kill.stdout).toBe('job: stubborn\nstatus: killed\n');
    expect(readFileSync(log, 'utf8')).toBe('started\nEOF\nTERM\n');
  });
});

describe('the control socket', () => {
  it('answers a request whose client half-closes after it, even when the answer comes later', async () => {
    const w = fresh();
    const standIn = join(w.root, 'ack-pi');
    // Starts the run, answers each steer as pi does, and exits when its stdin closes.
    writeFileSync(
      standIn,
      `#!${process.execPath}
const send = (r) => process.stdout.write(JSON.stringify(r) + '\\n');
let buffer = '';
process.stdin.on('data', (d) => {
  buffer += d;
  let nl;
  while ((nl = buffer.indexOf('\\n')) >= 0) {
    const record = JSON.parse(buffer.slice(0, nl));
    buffer = buffer.slice(nl + 1);
    if (record.type === 'prompt') send({ type: 'response', id: 'prompt', command: 'prompt', success: true, data: { disposition: 'started' } });
    if (record.type === 'steer') setTimeout(() => send({ type: 'response', id: record.id, command: 'steer', success: true, data: { disposition: 'queued' } }), 200);
  }
});
process.stdin.on('end', () => process.exit(0));
`,
      { mode: 0o755 },
    );
    const started = await w.job(['run', '--background', '--name', 'halfclosed', 'hi'], { env: { MULTI_AGENT_PI_BIN: standIn } });
    expect(started.code).toBe(0);
    await until(() => w.read('halfclosed', 'progress.log').includes('run 1 started'), 20_000, 'the run to start');
    // As `socat` or `nc -U` send it: no newline, then end of input; the runner still answers.
    const reply = await new Promise<string>((resolve, reject) => {
      const conn = net.createConnection(socketPath(w.jobDir('halfclosed')));
      let text = '';
      conn.setEncoding('utf8').on('data', (d: string) => (text += d));
      conn.on('error', reject);
      conn.on('close', () => resolve(text));
      conn.end('{"type": "steer", "message": "half-closed steer"}');
    });
    expect(reply).toBe('{"ok": true, "disposition": "queued"}\n');
    expect((await w.job(['kill', 'halfclosed'])).stdout).toBe('job: halfclosed\nstatus: killed\n');
  });
});

describe('shell completion', () => {
  it('completes commands and the job names of the current project', async () => {
    const w = fresh();
    for (const name of ['alpha-1', 'alpha-2', 'beta']) mkdirSync(w.jobDir(name), { recursive: true });
    expect((await w.job(['__names'])).stdout).toBe('alpha-1\nalpha-2\nbeta\n');
    const script = (await w.job(['completion', 'bash'])).stdout;
    expect(script).toContain('complete -F _prun_job prun-job');
    const probe = `${script}
prun-job() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }
COMP_WORDS=(prun-job status al); COMP_CWORD=2; _prun_job; echo "names: \${COMPREPLY[*]}"
COMP_WORDS=(prun-job ste); COMP_CWORD=1; _prun_job; echo "commands: \${COMPREPLY[*]}"
`;
    const bash = spawn('bash', ['-c', probe], { cwd: w.cwd, env: w.env });
    let out = '';
    bash.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    await new Promise((resolve) => bash.on('close', resolve));
    expect(out).toBe('names: alpha-1 alpha-2\ncommands: steer\n');
    expect((await w.job(['completion', 'fish'])).stdout).toContain("complete -c prun-job -f -a '(__prun_job_complete)'");
    expect((await w.job(['completion', 'tcsh'])).code).toBe(64);
  });
});
