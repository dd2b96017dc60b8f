// `prun wait` and `prun log` from a second shell while a batch runs, as the user guide types them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ABANDON_GRACE_MS, POLL_MS } from '../src/live/watch.js';
import { latestStatus, ledger, openGate, prun, sandbox, waitFor, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | null = null;
afterEach(() => {
  box?.cleanup();
  box = null;
});

const unit = (id: string, extra: Record<string, unknown> = {}, markers = '') => ({ id, prompt: `UNIT-ID:${id} ${markers}`, ...extra });
const has = (dir: string, id: string, status: string): boolean => {
  try {
    return ledger(dir).some((line) => line.id === id && line.status === status);
  } catch {
    return false;
  }
};

describe('prun wait', () => {
  it('blocks until the batch ends, started even before its directory exists, and exits with its code; --json is the batch summary', async () => {
    box = sandbox();
    const b = box;
    const plan = writePlan(b.root, [unit('ok'), unit('bad', {}, '[[agy EXIT=3]]'), unit('held', {}, '[[gate hold]]')]);
    // `prun batch PLAN --dir fanout & prun wait fanout`: the waiters may start first.
    const waitPlain = prun(['wait', 'fanout'], { env: b.env, cwd: b.root });
    const waitJson = prun(['wait', 'fanout', '--json'], { env: b.env, cwd: b.root });
    const batch = prun(['batch', plan, '--dir', 'fanout', '--json'], { env: b.env, cwd: b.root });
    const dir = join(b.root, 'fanout');
    await waitFor(() => has(dir, 'ok', 'done') && has(dir, 'bad', 'failed') && has(dir, 'held', 'running'), 'ok and bad settled, held running');
    // Still waiting: the batch has not ended.
    expect(waitPlain.exitCode).toBeNull();
    expect(waitJson.exitCode).toBeNull();
    openGate(b, 'hold');
    const [ran, plain, json] = await Promise.all([batch, waitPlain, waitJson]);
    expect(ran.exitCode).toBe(1);
    expect(plain.exitCode).toBe(1);
    expect(json.exitCode).toBe(1);
    expect(JSON.parse(String(json.stdout))).toEqual(JSON.parse(String(ran.stdout)));
    expect(String(plain.stdout)).toMatch(/^bad +failed +3 +fallback +Agy exited with code 3$/m);
    // A wait on a finished batch answers at once, with the same code.
    const again = await prun(['wait', dir], { env: b.env, cwd: b.root });
    expect(again.exitCode).toBe(1);
  }, 90_000);

  it('exits with 130 when the batch was interrupted', async () => {
    box = sandbox();
    const b = box;
    const plan = writePlan(b.root, [unit('held', {}, '[[gate hold]]'), unit('after', { depends_on: ['held'] })]);
    const dir = join(b.root, 'fanout');

    const batch = prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
    await waitFor(() => has(dir, 'held', 'running'), 'held running');
    const waiting = prun(['wait', dir], { env: b.env, cwd: b.root });
    batch.kill('SIGINT');
    expect((await batch).exitCode).toBe(130);
    expect((await waiting).exitCode).toBe(130);
  }, 150_000);

  it("keeps watching while a killed driver's supervisor runs its units, then says 104 (wait and status --watch alike); a resume & wait is not refused", async () => {
    box = sandbox();
    const b = box;
    const plan = writePlan(b.root, [unit('held', {}, '[[gate hold]]'), unit('after', { depends_on: ['held'] })]);
    const dir = join(b.root, 'fanout');
    const driver = prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
    await waitFor(() => has(dir, 'held', 'running'), 'held running');
    // kill -9 of the driver: its supervisor still runs `held`, so the watchers keep watching.
    const resumed = driver;
    const waiting2 = prun(['wait', dir], { env: b.env, cwd: b.root });
    const watching = prun(['status', dir, '--watch'], { env: b.env, cwd: b.root });
    resumed.kill('SIGKILL');
    await resumed;
    // Nothing to await here: the assertion is that nothing ends within the grace and a poll after it.
    await new Promise((resolve) => setTimeout(resolve, ABANDON_GRACE_MS + POLL_MS + 1000));
    expect(waiting2.exitCode).toBeNull();
    expect(watching.exitCode).toBeNull();
    openGate(b, 'hold');
    // Once its dispatch has ended, nobody will record it unless someone resumes: both say so, 104.
    const [abandoned, watched] = await Promise.all([waiting2, watching]);
    const line = `prun: ${dir} is not finished and no prun drives it (its driver was killed or crashed); prun batch --resume ${dir} finishes it`;
    expect(abandoned.exitCode).toBe(104);
    expect(String(abandoned.stderr)).toBe(line);
    expect(watched.exitCode).toBe(104);
    expect(String(watched.stderr).trim().split('\n').at(-1)).toBe(line);
    expect(String(watched.stdout)).toMatch(/^held +running/m);
    expect(readFileSync(join(dir, 'results', 'held.md'), 'utf8')).toMatch(/^# held result/);
    // `prun batch --resume D & prun wait D`: the waiter starts before the new driver takes the lock.
    const [resumedAgain, waited] = await Promise.all([prun(['batch', '--resume', dir], { env: b.env, cwd: b.root }), prun(['wait', dir], { env: b.env, cwd: b.root })]);
    expect(resumedAgain.exitCode).toBe(0);
    expect(waited.exitCode).toBe(0);
  }, 150_000);

  it('refuses what is not a batch directory with exit 2', async () => {
    box = sandbox();
    const r = await prun(['wait', box.root], { env: box.env, cwd: box.root });
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toBe(`prun: not a batch directory (no plan.json): ${box.root}`);
  }, 30_000);
});

describe('prun log', () => {
  it("renders a unit's stream events for a person, and --raw gives the tail's bytes as they are", async () => {
    box = sandbox();
    const b = box;
    const events = join(b.root, 'events.jsonl');
    const response = '# ev result\nConclusion: complete\nFiles: none\nOpen items: none\nVerification: read\n';
    // In the real CLI's shape: Python json.dumps spacing, one event a line.
    writeFileSync(
      events,
      [
        { event: 'init', model: 'gemini-3.8-flash-high', conversation_id: 'conv-7' },
        { event: 'message', role: 'assistant', content: 'I will read the parser first.' },
        { event: 'tool_use', tool_name: 'read_file', tool_id: 't1', parameters: { path: 'src/parse.ts' } },
        { event: 'tool_result', tool_id: 't1', tool_name: 'read_file', status: 'success', output: '120 lines' },
        { event: 'message', role: 'assistant', content: 'Done.' },
        { event: 'result', result: { response, status: 'SUCCESS' } },
      ]
        .map((event) => JSON.stringify(event).replaceAll('":', '": ').replaceAll(',"', ', "'))
        .join('\n') + '\n',
    );
    const plan = writePlan(b.root, [unit('ev', {}, `[[agy EVENTS_FILE=${events}]]`), unit('idle', { depends_on: ['ev'] }, '[[agy EXIT=3]]')]);
    const dir = join(b.root, 'fanout');
    await prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
    expect(latestStatus(dir).ev).toBe('done');
    const rendered = await prun(['log', 'fanout', 'ev'], { env: b.env, cwd: b.root });
    expect(rendered.exitCode).toBe(0);
    expect(String(rendered.stdout)).toBe(
      [
        '-- session: model gemini-3.8-flash-high, conversation conv-7',
        'I will read the parser first.',
        '> tool read_file {"path":"src/parse.ts"}',
        '< read_file ok: 120 lines',
        'Done.',
        '-- result SUCCESS',
        '   # ev result',
        '   Conclusion: complete',
        '   Files: none',
        '   Open items: none',
        '   Verification: read',
      ].join('\n'),
    );
    const raw = await prun(['log', 'fanout', 'ev', '--raw'], { env: b.env, cwd: b.root, encoding: 'buffer', stripFinalNewline: false });
    const stateDir = ledger(dir).filter((line) => line.id === 'ev').at(-1)!.state_dir!;
    expect(Buffer.compare(raw.stdout as unknown as Buffer, readFileSync(join(stateDir, 'tail')))).toBe(0);

    const unknown = await prun(['log', 'fanout', 'nope'], { env: b.env, cwd: b.root });
    expect(unknown.exitCode).toBe(2);
    expect(String(unknown.stderr)).toBe(`prun: no unit nope in ${join(dir, 'plan.json')}`);
  }, 60_000);

  it('--follow prints the output as it is written and ends when the unit settles', async () => {
    box = sandbox();
    const b = box;
    const plan = writePlan(b.root, [unit('slow', {}, '[[gate go]] [[agy EXTRA_LINES=5]] [[agy EXTRA_LINE_DELAY_MS=150]]')]);
    const dir = join(b.root, 'fanout');
    const batch = prun(['batch', plan, '--dir', dir], { env: b.env, cwd: b.root });
    await waitFor(() => has(dir, 'slow', 'running'), 'slow running');
    const follow = prun(['log', dir, 'slow', '--follow'], { env: b.env, cwd: b.root });
    let printed = '';
    follow.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    openGate(b, 'go');
    // Lines arrive while the worker is still writing: before its result event.
    await waitFor(() => printed.includes('progress 2 of 5'), 'the first lines, live');
    expect(printed).not.toContain('-- result');
    const followed = await follow;
    expect(followed.exitCode).toBe(0);
    // It ended because the unit settled, not before.
    expect(latestStatus(dir).slow).toBe('done');
    expect(String(followed.stdout)).toBe(
      ['-- session: model gemini-3.8-flash-high, conversation conv-fixed-0001', ...[1, 2, 3, 4, 5].map((i) => `progress ${i} of 5`), '-- result SUCCESS', '   # slow result', '   Conclusion: complete', '   Files: none', '   Open items: none', '   Verification: fake agy'].join('\n'),
    );
    expect((await batch).exitCode).toBe(0);
    // On a settled unit --follow has nothing to wait for.
    const late = await prun(['log', dir, 'slow', '-f'], { env: b.env, cwd: b.root, timeout: 20_000 });
    expect(late.exitCode).toBe(0);
    expect(String(late.stdout)).toBe(String(followed.stdout));
  }, 60_000);
});
