import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  appendPrompt,
  checkDepth,
  childEnv,
  defaultName,
  deriveStatus,
  formatAge,
  formatG,
  formatListTable,
  formatResultBlock,
  LineSplitter,
  listJobs,
  mergeProfiles,
  parseArgs,
  parseFrontmatter,
  parseSeconds,
  parseTimeScale,
  piArgv,
  pickProfile,
  profileArgs,
  projectSlug,
  pyDumps,
  RunTracker,
  runTimeout,
  settledStatus,
  shellQuote,
  socketPath,
  splitItems,
  toJobRecord,
  validateName,
  type SkippedLine,
} from '../src/index.js';
import { parsePythonJson } from '../src/text.js';

describe('argument parsing', () => {
  it('takes --opt value, --opt=value, flags, positionals and --', () => {
    const a = parseArgs(['--name', 'x', '--timeout=5', '--background', 'hello', '--', '--not-an-option'], ['--name', '--timeout'], ['--background']);
    expect(a.values.get('--name')).toBe('x');
    expect(a.values.get('--timeout')).toBe('5');
    expect(a.flags.has('--background')).toBe(true);
    expect(a.positional).toEqual(['hello', '--not-an-option']);
  });
  it('treats a lone - as a positional (stdin)', () => {
    expect(parseArgs(['-'], [], []).positional).toEqual(['-']);
  });
  it('refuses unknown options, values on flags and missing values with exit 64', () => {
    for (const argv of [['--bogus'], ['--background=1'], ['--name']]) {
      expect(() => parseArgs(argv, ['--name'], ['--background'])).toThrow(expect.objectContaining({ code: 64 }));
    }
  });
  it('parses seconds like Python float and refuses negatives, nan and inf', () => {
    expect(parseSeconds(' 1.5 ', '--timeout')).toBe(1.5);
    expect(parseSeconds('1e1', '--timeout')).toBe(10);
    // Python's float() takes single underscores between digits.
    expect(parseSeconds('1_000', '--timeout')).toBe(1000);
    expect(parseSeconds('1_0.2_5e0_1', '--timeout')).toBe(102.5);
    // As python3's float(): NEL around the number is space, Unicode digits count, U+FEFF is no space.
    expect(parseSeconds('1\x85', '--timeout')).toBe(1);
    expect(parseSeconds('\u0661\u0662', '--timeout')).toBe(12);
    for (const bad of ['1__0', '_1', '1_', '1_.5', '1._5', '\ufeff1', '1\x1c']) {
      expect(() => parseSeconds(bad, '--timeout')).toThrow(/--timeout needs a number of seconds/);
    }
    // `wait` takes inf as the original does: no limit.
    expect(parseSeconds('inf', '--timeout', { allowInfinite: true })).toBe(Infinity);
    expect(() => parseSeconds('-inf', '--timeout', { allowInfinite: true })).toThrow(/needs a number of seconds/);
    for (const bad of ['-1', 'nan', 'inf', 'abc', '']) {
      expect(() => parseSeconds(bad, '--timeout')).toThrow(/--timeout needs a number of seconds/);
    }
  });
  it('defaults the timeout to 3600 s in the background and none in the foreground; 0 is none', () => {
    expect(runTimeout(parseArgs([], ['--timeout'], []), true)).toBe(3600);
    expect(runTimeout(parseArgs([], ['--timeout'], []), false)).toBeNull();
    expect(runTimeout(parseArgs(['--timeout', '0'], ['--timeout'], []), true)).toBeNull();
  });
  it('validates job names as the original does', () => {
    for (const good of ['a', 'a1', 'my.job_name-2', 'x'.repeat(64)]) expect(() => validateName(good)).not.toThrow();
    for (const bad of ['', '-a', 'a-', 'a b', 'x'.repeat(65), '../x', 'a/b']) {
      expect(() => validateName(bad)).toThrow(expect.objectContaining({ code: 64 }));
    }
    expect(() => validateName('a b')).toThrow("invalid job name: 'a b'");
  });
  it('derives default names from the profile', () => {
    expect(defaultName('General Purpose!', 'beef')).toBe('general-purpose-beef');
    expect(defaultName('...', '0000')).toBe('agent-0000');
    fc.assert(fc.property(fc.string(), (name) => {
      expect(() => validateName(defaultName(name, 'abcd'))).not.toThrow();
    }));
  });
  it('refuses a bad MULTI_AGENT_TIME_SCALE', () => {
    expect(parseTimeScale(undefined)).toBe(1);
    expect(parseTimeScale('0.5')).toBe(0.5);
    expect(() => parseTimeScale('0')).toThrow(/MULTI_AGENT_TIME_SCALE/);
    expect(() => parseTimeScale('x')).toThrow(/MULTI_AGENT_TIME_SCALE/);
    expect(() => parseTimeScale('\ufeff1')).toThrow(/MULTI_AGENT_TIME_SCALE/);
    expect(parseTimeScale('\u0660.5\xa0')).toBe(0.5);
  });
  it('enforces the depth limit from the environment', () => {
    expect(checkDepth({})).toBe(1);
    expect(checkDepth({ MULTI_AGENT_DEPTH: '1' })).toBe(2);
    expect(() => checkDepth({ MULTI_AGENT_DEPTH: '2' })).toThrow('cannot start an agent: this caller is at depth 2 and MULTI_AGENT_MAX_DEPTH is 2');
    expect(checkDepth({ MULTI_AGENT_DEPTH: '2', MULTI_AGENT_MAX_DEPTH: '3' })).toBe(3);
    expect(checkDepth({ MULTI_AGENT_DEPTH: 'junk' })).toBe(1);
  });
});

describe('state layout', () => {
  it('slugs a project path like the original', () => {
    expect(projectSlug('/home/me/my project')).toBe('home-me-my-project');
    expect(projectSlug('/tmp/é')).toBe('tmp--');
  });
  it('puts the socket at <root>/sockets/<16 hex of sha256(job dir)>.sock', () => {
    const jobDir = '/s/pi-multi-agent/proj/jobs/a';
    const digest = createHash('sha256').update(jobDir).digest('hex').slice(0, 16);
    expect(socketPath(jobDir)).toBe(`/s/pi-multi-agent/sockets/${digest}.sock`);
  });
  it('derives a status from the lock and the recorded files', () => {
    expect(deriveStatus('busy', false, undefined)).toBe('running');
    expect(deriveStatus('busy', true, 'done\n')).toBe('running');
    expect(deriveStatus('acquired', false, 'running\n')).toBe('died');
    expect(deriveStatus('acquired', true, 'killed\n')).toBe('killed');
    expect(deriveStatus('acquired', true, '')).toBe('unknown');
    expect(deriveStatus('missing', true, 'done')).toBe('done');
  });
  it('formats the result block exactly', () => {
    const block = formatResultBlock({ output: 'hi\n\n', name: 'a', status: 'done', profile: 'p', model: 'm', durationS: 3 });
    expect(block).toBe('hi\n\n--- multi-agent ---\nname: a\nstatus: done\nprofile: p\nmodel: m\nduration_s: 3\n');
    expect(formatResultBlock({ output: ' \n', name: 'a', status: 'died', profile: '?', model: '(pi default)', durationS: undefined })).toBe(
      '(no output)\n\n--- multi-agent ---\nname: a\nstatus: died\nprofile: ?\nmodel: (pi default)\nduration_s: ?\n',
    );
  });
  it('lays out the list table with padded columns and an unpadded age', () => {
    const text = formatListTable([
      { name: 'long-name', status: 'running', mode: 'background', parent: '-', age: '3s', started_at: null, ended_at: null },
      { name: 'b', status: 'done', mode: 'foreground', parent: 'p', age: '2m', started_at: null, ended_at: null },
    ]);
    expect(text).toBe(
      'NAME       STATUS   MODE        PARENT  AGE\nlong-name  running  background  -       3s\nb          done     foreground  p       2m\n',
    );
    expect(formatListTable([])).toBe('no jobs in this project\n');
  });
  it('formats ages and seconds as the original', () => {
    expect([0, 59, 60, 3599, 3600, 86400].map(formatAge)).toEqual(['0s', '59s', '1m', '59m', '1h', '1d']);
    expect([5, 0.5, 3600, 1.25, 1234567, 0.00001].map(formatG)).toEqual(['5', '0.5', '3600', '1.25', '1.23457e+06', '1e-05']);
  });
  it('quotes like shlex.quote', () => {
    expect(shellQuote('/a/b-c_d.e')).toBe('/a/b-c_d.e');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'"'"'s'`);
  });
  it('writes control lines as Python json.dumps does', () => {
    expect(pyDumps({ ok: true, disposition: 'queued' })).toBe('{"ok": true, "disposition": "queued"}');
    expect(pyDumps({ type: 'steer', message: 'é' })).toBe('{"type": "steer", "message": "\\u00e9"}');
  });
});

describe('profiles', () => {
  const file = (scope: 'project' | 'user' | 'builtin', entry: string, text: string) => ({ scope, entry, text, path: `/${scope}/${entry}` });

  it('parses frontmatter scalars, quotes, booleans and lists', () => {
    const { fields, body } = parseFrontmatter(
      '---\nname: "Quoted \\u0041"\ntools: [read, "bash", \'a,b\']\nenabled: FALSE\n  nested: skipped\n# comment\nthinking: high\n---\n\nBody text.\n',
    );
    expect(fields).toEqual({ name: 'Quoted A', tools: ['read', 'bash', 'a,b'], enabled: false, thinking: 'high' });
    expect(body).toBe('Body text.');
    expect(parseFrontmatter('no frontmatter\n')).toEqual({ fields: {}, body: 'no frontmatter' });
    expect(splitItems('a, "b,c" ,,d')).toEqual(['a', '"b,c"', 'd']);
  });
  it('lets a higher directory replace a profile whole, case-insensitively', () => {
    const merged = mergeProfiles([
      file('project', 'Reviewer.md', '---\nname: reviewer\ndescription: project one\n---\nP'),
      file('user', 'reviewer.md', '---\ndescription: user one\nmodel: m/x\n---\nU'),
    ]);
    const p = pickProfile(merged, 'REVIEWER');
    expect(p.description).toBe('project one');
    expect(p.model).toBeNull();
    expect(p.source).toBe('/project/Reviewer.md');
  });
  it('hides lower profiles behind a disabled one', () => {
    const merged = mergeProfiles([
      file('user', 'general-purpose.md', '---\nenabled: false\n---\n'),
      file('builtin', 'general-purpose.md', '---\nname: general-purpose\n---\nB'),
      file('builtin', 'other.md', 'plain body'),
    ]);
    expect(() => pickProfile(merged, 'general-purpose')).toThrow('unknown profile: general-purpose (available: other)');
  });
  it('refuses a bad prompt_mode', () => {
    const merged = mergeProfiles([file('user', 'x.md', '---\nprompt_mode: sideways\n---\n')]);
    expect(() => pickProfile(merged, 'x')).toThrow('profile x in /user/x.md: prompt_mode must be append or replace, got sideways');
  });
  it('turns a profile into pi arguments and the appended prompt', () => {
    const [append] = mergeProfiles([file('user', 'a.md', '---\ntools: read, bash\ndisallowed_tools: [write]\n---\nBe terse.')]).values();
    expect(profileArgs(append!, 'fake/m', 'low', '/j/system-prompt.md')).toEqual([
      '--model', 'fake/m', '--thinking', 'low', '--tools', 'read,bash', '-xt', 'write',
    ]);
    expect(appendPrompt(append!, 'job1')).toMatch(/^Be terse\.\n\n<multi-agent>\n[\s\S]*job1[\s\S]*<\/multi-agent>\n$/);
    const [replace] = mergeProfiles([file('user', 'r.md', '---\nprompt_mode: Replace\n---\nOnly me.')]).values();
    expect(profileArgs(replace!, null, null, '/j/system-prompt.md')).toEqual(['--system-prompt', '/j/system-prompt.md', '-nc']);
    expect(appendPrompt(replace!, 'job1')).not.toContain('Only me.');
  });
});

describe('the runner', () => {
  it('builds pi argv with --fork only on the first run', () => {
    const job = { name: 'j', session_dir: '/s', fork: '/f.jsonl', run_kind: 'new', pi_args: ['--model', 'x'] };
    expect(piArgv('/jd', job, 'pi')).toEqual([
      'pi', '--mode', 'rpc', '--session-dir', '/s', '--fork', '/f.jsonl', '--session-id', 'j', '--model', 'x',
      '--append-system-prompt', '/jd/append-prompt.md',
    ]);
    expect(piArgv('/jd', { ...job, run_kind: 'resume' }, 'pi')).not.toContain('--fork');
  });
  it("gives pi the job's environment and drops HERDR_*", () => {
    const env = childEnv('/jd', { cwd: '/w', depth: 2 }, { HERDR_PANE_ID: '1', KEEP: 'y' });
    expect(env).toMatchObject({ KEEP: 'y', MULTI_AGENT_JOB: '/jd', MULTI_AGENT_DEPTH: '2', PI_MINIMAL_PERMISSION_SYSTEM_NONINTERACTIVE: '1', PWD: '/w' });
    expect(env['HERDR_PANE_ID']).toBeUndefined();
  });
  it('tracks text, model, usage, progress and dialogs from rpc records', () => {
    const t = new RunTracker({ input: 1 });
    expect(t.handleLine('{"type":"tool_execution_start","toolName":"bash","args":{"command":"ls   -l"}}').progress).toEqual(['bash ls -l']);
    expect(t.handleLine('{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"errorMessage":"boom"}').progress).toEqual(['retry 1/3: boom']);
    expect(t.handleLine('{"type":"compaction_start","reason":"threshold"}').progress).toEqual(['compaction (threshold)']);
    const dialog = t.handleLine('{"type":"extension_ui_request","id":"u1","method":"confirm","title":"Allow?"}');
    expect(dialog).toEqual({ progress: ['denied: Allow?'], send: [{ type: 'extension_ui_response', id: 'u1', cancelled: true }] });
    expect(t.handleLine('{"type":"extension_ui_request","id":"u2","method":"notify"}').send).toEqual([]);
    t.handleLine(
      JSON.stringify({
        type: 'message_end',
        message: { role: 'assistant', content: [{ type: 'text', text: ' Hello ' }], provider: 'fake', model: 'm', stopReason: 'stop', usage: { input: 2, output: 3, cost: { total: 0.1 } } },
      }),
    );
    expect(t.lastText).toBe('Hello');
    expect(t.modelUsed).toBe('fake/m');
    expect(t.usage).toEqual({ input: 3, output: 3, cost: 0.1 });
    // An aborted message without content keeps the text before it.
    t.handleLine(JSON.stringify({ type: 'message_end', message: { role: 'assistant', content: [], stopReason: 'aborted' } }));
    expect(t.lastText).toBe('Hello');
    expect(t.handleLine('{"type":"response","id":"steer-1","success":true,"data":{"disposition":"queued"}}').ack).toEqual({
      id: 'steer-1',
      reply: { ok: true, disposition: 'queued' },
    });
    expect(t.handleLine('not json').progress).toEqual([]);
    expect(t.settled).toBe(false);
    t.handleLine('{"type":"agent_settled"}');
    expect(t.settled).toBe(true);
  });
  it('decides the end status of a settled run', () => {
    expect(settledStatus({ timingOut: true, abortRequested: true, lastStop: 'stop' })).toBe('timeout');
    expect(settledStatus({ timingOut: false, abortRequested: true, lastStop: 'stop' })).toBe('aborted');
    expect(settledStatus({ timingOut: false, abortRequested: false, lastStop: 'aborted' })).toBe('aborted');
    expect(settledStatus({ timingOut: false, abortRequested: false, lastStop: 'error' })).toBe('failed');
    expect(settledStatus({ timingOut: false, abortRequested: false, lastStop: 'stop' })).toBe('done');
  });
});

describe('state files written by the original', () => {
  it("reads Python's Infinity, -Infinity and NaN (json.dumps writes them) but leaves strings alone", () => {
    const text = '{"timeout": Infinity, "low": -Infinity, "odd": NaN, "note": "Infinity, NaN", "esc": "a\\" NaN"}';
    // NaN stays NaN, as in Python (a timeout of NaN sets no deadline in either program).
    expect(parsePythonJson(text)).toEqual({ timeout: Infinity, low: -Infinity, odd: Number.NaN, note: 'Infinity, NaN', esc: 'a" NaN' });
    expect(parsePythonJson('{"a": 1}')).toEqual({ a: 1 });
    expect(parsePythonJson('{ not json')).toBeUndefined();
  });
});

describe("reading pi's stdout", () => {
  const split = (chunks: string[], max = 8): { lines: string[]; skipped: SkippedLine[] } => {
    const lines: string[] = [];
    const skipped: SkippedLine[] = [];
    const splitter = new LineSplitter({ line: (l) => lines.push(l), skipped: (s) => skipped.push(s) }, max);
    for (const chunk of chunks) splitter.push(Buffer.from(chunk));
    splitter.end();
    return { lines, skipped };
  };
  it('splits at LF only, across chunk borders, and keeps a last line without LF', () => {
    expect(split(['ab', 'c\nd', '\u2028e\r\n\nf'])).toEqual({ lines: ['abc', 'd\u2028e\r', '', 'f'], skipped: [] });
    expect(split(['a\n'])).toEqual({ lines: ['a'], skipped: [] });
  });
  it('drops a line longer than the bound as it streams, reports its size and head, and goes on', () => {
    const { lines, skipped } = split(['{"type":"x",', '"long":1}', '23\nok\n12345678\n123456789'], 8);
    expect(lines).toEqual(['ok', '12345678']);
    expect(skipped).toEqual([
      { bytes: 23, head: '{"type":"x",' },
      { bytes: 9, head: '123456789' },
    ]);
  });
  it('matches a whole-buffer split on random input', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', '\n') }), { maxLength: 20 }), (chunks) => {
        const whole = chunks.join('');
        const expected = whole.split('\n');
        if (expected[expected.length - 1] === '') expected.pop();
        const { lines, skipped } = split(chunks, 1 << 20);
        expect(skipped).toEqual([]);
        expect(lines).toEqual(expected);
      }),
    );
  });
  it('logs a skipped record and says where a skipped final reply is', () => {
    const t = new RunTracker();
    t.handleLine('{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"earlier"}]}}');
    const update = t.handleSkipped({ bytes: 20 * 1024 * 1024, head: '{"type":"message_update","message":{"role":"assistant"' }, 16 * 1024 * 1024);
    expect(update.progress).toEqual(['skipped an over-long pi record: message_update, 20 MiB (limit 16 MiB)']);
    expect(t.lastText).toBe('earlier');
    t.handleSkipped({ bytes: 17.5 * 1024 * 1024, head: '{"type":"message_end","message":{"role":"assistant","content"' }, 16 * 1024 * 1024);
    expect(t.lastText).toContain("the agent's last message was 17.5 MiB, more than prun-job reads");
    expect(t.handleSkipped({ bytes: 1, head: 'garbage' }, 16).progress[0]).toContain(': unknown, ');
  });
});

describe('job.json and the job listing as data', () => {
  it('keeps unknown keys and key order, and drops fields of the wrong type', () => {
    const record = toJobRecord({ zeta: 1, name: 'a', depth: 'x', parent: null, pi_args: ['--x', 2], timeout: null, mode: 'background' });
    expect(record).toEqual({ zeta: 1, name: 'a', parent: null, timeout: null, mode: 'background' });
    expect(Object.keys(record ?? {})).toEqual(['zeta', 'name', 'parent', 'timeout', 'mode']);
    expect(toJobRecord([1])).toBeUndefined();
    expect(toJobRecord(null)).toBeUndefined();
  });
  it('listJobs returns the rows that list --json prints, oldest first, recent ones without --all', () => {
    const root = mkdtempSync(join(tmpdir(), 'prun-job-u-'));
    try {
      const env = { XDG_STATE_HOME: join(root, 'state') };
      const jobs = join(root, 'state', 'pi-multi-agent', projectSlug('/p'), 'jobs');
      const make = (name: string, started: string, ended: string | undefined, job: object): void => {
        mkdirSync(join(jobs, name), { recursive: true });
        writeFileSync(join(jobs, name, 'job.json'), JSON.stringify(job));
        writeFileSync(join(jobs, name, 'started_at'), started + '\n');
        writeFileSync(join(jobs, name, 'status'), 'done\n');
        if (ended) {
          writeFileSync(join(jobs, name, 'ended_at'), ended + '\n');
          writeFileSync(join(jobs, name, 'exit_code'), '0\n');
        }
      };
      make('old', '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z', { mode: 'background', parent: '/x/jobs/boss' });
      make('new', '2026-01-03T00:00:00Z', '2026-01-03T00:00:30Z', { mode: 'foreground' });
      make('lost', '2026-01-02T00:00:00Z', undefined, { mode: 7 });
      const nowS = Date.parse('2026-01-03T01:00:00Z') / 1000;
      const rows = listJobs({ env, project: '/p', all: true, nowS });
      expect(rows).toEqual([
        { name: 'old', status: 'done', mode: 'background', parent: 'boss', age: '2d', started_at: '2026-01-01T00:00:00Z', ended_at: '2026-01-01T00:01:00Z' },
        { name: 'lost', status: 'died', mode: '-', parent: '-', age: '1d', started_at: '2026-01-02T00:00:00Z', ended_at: null },
        { name: 'new', status: 'done', mode: 'foreground', parent: '-', age: '59m', started_at: '2026-01-03T00:00:00Z', ended_at: '2026-01-03T00:00:30Z' },
      ]);
      expect(listJobs({ env, project: '/p', nowS }).map((r) => r.name)).toEqual(['new']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

const python3 = spawnSync('python3', ['--version']).status === 0;

describe('the invalid-name message', () => {
  it.skipIf(!python3)("quotes the name as python3's repr() does, NEL, NBSP and ZWSP escaped (skipped without python3)", () => {
    const names = ['a\u0085b', 'a\u00a0b', 'a\u200bb', 'a\u007fb', "it's", 'say "hi"', `both'"`, 'tab\there', 'é-ü', '-x', ''];
    const reprs = JSON.parse(
      spawnSync('python3', ['-c', 'import json, sys; print(json.dumps([repr(n) for n in json.load(sys.stdin)]))'], {
        input: JSON.stringify(names),
        encoding: 'utf8',
      }).stdout,
    ) as string[];
    expect(reprs.slice(0, 3)).toEqual(["'a\\x85b'", "'a\\xa0b'", "'a\\u200bb'"]);
    names.forEach((name, i) => {
      let message = '';
      try {
        validateName(name);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message.startsWith(`invalid job name: ${reprs[i]} (`)).toBe(true);
    });
  });
});
