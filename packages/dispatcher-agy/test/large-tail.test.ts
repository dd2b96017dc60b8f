/**
 * The end of a unit costs memory independent of the tail's size (README, "Reading the captures
 * back"): the built bin, run as a user would against tools/fake-agy, reads a 200 MB event
 * stream, publishes the same FALLBACK bytes as the whole-text rendering would, and its peak RSS
 * stays under a bound (it used to read the tail whole: about 1.5 GiB for this run). And the
 * cases a buffered reader gets wrong: lines, CRLF pairs and events cut by its buffer, a result
 * longer than the buffer, lone CR, an init event spelled with a JSON escape, an empty tail.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderFallback } from '@prun/unit-state';
import { afterAll, describe, expect, test } from 'vitest';
import { CAPTURE_BUFFER_BYTES } from '../src/capture-read.js';
import { lastLines } from '../src/decide.js';
import { universalNewlines } from '../src/validate.js';
import { BIN, readState, rootPool, type Root } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const TIME = '/usr/bin/time';
const haveTime = existsSync(TIME);
/** The bound on the dispatcher's peak RSS (with its worker's, the fake: about 47 MiB) for a 200 MB tail. */
const PEAK_RSS_BOUND_MIB = 160;
const LARGE_TAIL_BYTES = 200 * 1024 * 1024;

const pyEvent = (value: unknown): string => JSON.stringify(value).replace(/":/g, '": ').replace(/,"/g, ', "');

function stepLine(index: number): string {
  return pyEvent({
    event: 'step_update',
    step_update: { step_index: index, step_type: 'agent_response', state: 'DONE', text_delta: `progress ${index}: lorem ipsum dolor sit amet, consectetur` },
  });
}

/** Run the bin under /usr/bin/time: its exit code, stderr, and peak RSS (KiB) over it and its worker. */
function runTimed(root: Root, env: Record<string, string>): Promise<{ code: number | null; stderr: string; maxRssKib: number; stateDir: string }> {
  const rssFile = join(root.dir, 'maxrss');
  const argv = ['-f', '%M', '-o', rssFile, process.execPath, BIN, '--prompt-file', root.prompt, '--result-file', root.result, '--unit-id', 'unit_a', '--mode', 'plan'];
  return new Promise((resolve, reject) => {
    const child = spawn(TIME, argv, { cwd: root.dir, env: { ...root.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const stateDir = /^STATE-DIR (.+)\n$/.exec(Buffer.concat(out).toString('utf8'))?.[1];
      if (stateDir === undefined) return reject(new Error(`no STATE-DIR line: ${Buffer.concat(err).toString('utf8')}`));
      resolve({ code, stderr: Buffer.concat(err).toString('utf8'), maxRssKib: Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()), stateDir });
    });
  });
}

/** Feed bytes [start, end) of a file to `hash`, 1 MiB at a time. */
function hashRange(hash: ReturnType<typeof createHash>, path: string, start: number, end: number): void {
  const fd = openSync(path, 'r');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  try {
    for (let at = start; at < end; ) {
      const n = readSync(fd, buffer, 0, Math.min(buffer.length, end - at), at);
      hash.update(buffer.subarray(0, n));
      at += n;
    }
  } finally {
    closeSync(fd);
  }
}

function sha256OfFile(path: string): string {
  const hash = createHash('sha256');
  hashRange(hash, path, 0, statSync(path).size);
  return hash.digest('hex');
}

/** The digest of the FALLBACK a whole-text rendering gives for `stdout` (a text without Python whitespace at its ends) and an empty stderr. */
function fallbackAround(reason: string, stdoutDigest: (hash: ReturnType<typeof createHash>) => void, unitId = 'unit_a'): string {
  const marker = 'S';
  const [head, tail] = renderFallback({ unitId, reason, stdout: marker }).split(`\n${marker}\n`) as [string, string];
  const hash = createHash('sha256');
  hash.update(`${head}\n`);
  stdoutDigest(hash);
  hash.update(`\n${tail}`);
  return hash.digest('hex');
}

/** An event stream of about `bytes` bytes: an init event, step_update events, an ERROR result. */
function largeStream(path: string, bytes: number, conversationId: string): number {
  const fd = openSync(path, 'w');
  writeSync(fd, `${pyEvent({ event: 'init', model: 'gemini-3.8-flash-high', conversation_id: conversationId })}\n`);
  let written = 0;
  let index = 0;
  while (written < bytes) {
    const lines: string[] = [];
    for (let k = 0; k < 10_000; k += 1) lines.push(stepLine((index += 1)));
    const text = `${lines.join('\n')}\n`;
    writeSync(fd, text);
    written += text.length;
  }
  writeSync(fd, `${pyEvent({ event: 'result', result: { status: 'ERROR', error: 'backend overloaded', response: 'partial' } })}\n`);
  closeSync(fd);
  return statSync(path).size;
}

const HOST_UNITS = fileURLToPath(new URL('./fixtures/host-units.mjs', import.meta.url));
/** The bound on the peak RSS of one process hosting four units whose 30 MB tails end at once. */
const HOSTED_PEAK_RSS_BOUND_MIB = 180;

describe('the end of a unit with a large tail', () => {
  test.skipIf(!haveTime)(
    `a 200 MB tail ending in failure: the whole-text FALLBACK bytes, the last lines echoed, peak RSS under ${PEAK_RSS_BOUND_MIB} MiB${haveTime ? '' : ' (skipped: /usr/bin/time is missing; tools/debian-packages.txt lists time)'}`,
    async () => {
      const root = pool.root();
      const events = join(root.dir, 'events.jsonl');
      const size = largeStream(events, LARGE_TAIL_BYTES, 'conv-large');

      const run = await runTimed(root, { FAKE_AGY_EVENTS_FILE: events });
      expect(run.code).toBe(70);
      expect(readState(run.stateDir, 'conversation-id')).toBe('conv-large\n');
      // The tail is the event stream byte for byte; the FALLBACK holds it stripped (its final newline).
      expect(sha256OfFile(join(run.stateDir, 'tail'))).toBe(sha256OfFile(events));
      const reason = 'Agy reported status ERROR: backend overloaded';
      const expected = fallbackAround(reason, (hash) => hashRange(hash, events, 0, size - 1));
      expect(statSync(root.result).size).toBe(size - 1 + renderFallback({ unitId: 'unit_a', reason, stdout: 'S' }).length - 1);
      expect(sha256OfFile(root.result)).toBe(expected);
      // The echo: the dispatcher's reason line, then the tail's last 80 lines.
      const lastBytes = readRange(events, size - 64 * 1024, size).toString('utf8');
      expect(run.stderr).toContain(`dispatch-task-agy: ${reason}\n${lastLines(lastBytes).join('\n')}\n`);
      expect(run.maxRssKib / 1024).toBeLessThan(PEAK_RSS_BOUND_MIB);
    },
    180_000,
  );

  test.skipIf(!haveTime)(
    `four units hosted in one process (runUnit, as a batch's supervisor runs them), 30 MB tails each: the same FALLBACKs, peak RSS under ${HOSTED_PEAK_RSS_BOUND_MIB} MiB${haveTime ? '' : ' (skipped: /usr/bin/time is missing)'}`,
    async () => {
      const root = pool.root();
      const events = join(root.dir, 'events.jsonl');
      const size = largeStream(events, 30 * 1024 * 1024, 'conv-hosted');
      const rssFile = join(root.dir, 'maxrss');
      const env = { ...root.baseEnv(), ANTIGRAVITY_PREFLIGHT: 'off', FAKE_AGY_EVENTS_FILE: events };
      const output = await new Promise<string>((resolve, reject) => {
        const child = spawn(TIME, ['-f', '%M', '-o', rssFile, process.execPath, HOST_UNITS, root.dir, '4'], { cwd: root.dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
        const out: Buffer[] = [];
        child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out).toString('utf8')) : reject(new Error(`host exited ${code}`))));
      });
      const reason = 'Agy reported status ERROR: backend overloaded';
      const echoBytes = Buffer.byteLength(`dispatch-task-agy: ${reason}\n`) + lastLines(readRange(events, size - 64 * 1024, size).toString('utf8')).join('\n').length + 1;
      expect(output.trim().split(' ')).toEqual(['70', '70', '70', '70'].map((code) => `${code}:${echoBytes}`));
      for (let index = 0; index < 4; index += 1) {
        const result = join(root.dir, `u${index}`, 'unit-result.md');
        expect(sha256OfFile(result)).toBe(fallbackAround(reason, (hash) => hashRange(hash, events, 0, size - 1), `u${index}`));
      }
      const peakMib = Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()) / 1024;
      expect(peakMib).toBeLessThan(HOSTED_PEAK_RSS_BOUND_MIB);
    },
    180_000,
  );
});

function readRange(path: string, start: number, end: number): Buffer {
  const buffer = Buffer.allocUnsafe(end - start);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, start);
  } finally {
    closeSync(fd);
  }
  return buffer;
}

/** What the dispatcher published before it read its captures in pieces: the whole-text rendering. */
function wholeTextFallback(stateDir: string, reason: string): string {
  return renderFallback({
    unitId: 'unit_a',
    reason,
    stdout: universalNewlines(readFileSync(join(stateDir, 'tail'), 'utf8')),
    stderr: universalNewlines(readFileSync(join(stateDir, 'tail.stderr-tmp'), 'utf8')),
  });
}

describe.concurrent('what a buffered reader of the tail can get wrong', () => {
  const BUF = CAPTURE_BUFFER_BYTES;
  /** Filler lines (step_update events, LF-ended) up to exactly `bytes` bytes. */
  const fillTo = (bytes: number): string => {
    let text = '';
    let index = 0;
    while (bytes - text.length > 300) text += `${stepLine((index += 1))}\n`;
    const rest = bytes - text.length;
    return `${text}${'x'.repeat(rest - 1)}\n`;
  };

  test('events cut by the buffer, CRLF cut between CR and LF, lone CR, a result longer than the buffer', async ({ expect }) => {
    const root = pool.root();
    const init = pyEvent({ event: 'init', model: 'gemini-3.8-flash-high', conversation_id: 'conv-cut' });
    // The init event straddles the first buffer boundary; the CRLF after the next line is cut
    // by the second, between CR and LF.
    let stream = fillTo(BUF - 10) + init + '\r\n';
    const beforeCr = 2 * BUF - 1 - stream.length;
    stream += `${'y'.repeat(beforeCr)}\r\n`;
    expect(stream.slice(2 * BUF - 1, 2 * BUF + 1)).toBe('\r\n');
    stream += `${stepLine(7)}\r${stepLine(8)}\r`;
    const response = `# unit_a result\nConclusion: complete\n${'long line of the response '.repeat(Math.ceil((BUF * 1.5) / 26))}\n`;
    stream += `${pyEvent({ event: 'result', result: { response } })}\r\n`;
    const events = join(root.dir, 'events.jsonl');
    writeFileSync(events, stream);
    const run = await root.run({ env: { FAKE_AGY_EVENTS_FILE: events } });
    expect(run.code).toBe(0);
    expect(readState(run.stateDir, 'conversation-id')).toBe('conv-cut\n');
    expect(readFileSync(root.result, 'utf8')).toBe(`${response.trim()}\n`);
    // The echo is str.splitlines of the tail (a lone CR ends a line too), the last 80 lines.
    expect(run.stderr).toBe(lastLines(stream).map((line) => `${line}\n`).join(''));
    expect(run.stderr).toContain(`\n${stepLine(7)}\n${stepLine(8)}\n`);
  });

  test('the same stream ending in failure: the FALLBACK is the whole-text rendering, byte for byte', async ({ expect }) => {
    const root = pool.root();
    const init = pyEvent({ event: 'init', model: 'gemini-3.8-flash-high', conversation_id: 'conv-fail' });
    let stream = ` \u3000\r\n${fillTo(BUF - 10)}${init}\r`;
    stream += `${'\u00e9'.repeat(BUF)}\r\n${stepLine(3)}\r${pyEvent({ event: 'result', result: { status: 'ERROR', error: 'quota\r\nexceeded' } })}\n\u2028 \n`;
    const events = join(root.dir, 'events.jsonl');
    writeFileSync(events, stream);
    const run = await root.run({ env: { FAKE_AGY_EVENTS_FILE: events, FAKE_AGY_STDERR: '\\n  warning: a\r\\nb \\n' } });
    expect(run.code).toBe(70);
    expect(readState(run.stateDir, 'conversation-id')).toBe('conv-fail\n');
    const reason = 'Agy reported status ERROR: quota exceeded';
    expect(readFileSync(root.result).equals(Buffer.from(wholeTextFallback(run.stateDir!, reason), 'utf8'))).toBe(true);
    expect(readFileSync(root.result, 'utf8')).toContain('## stderr\n\n```text\nwarning: a\nb\n```\n');
  });

  test('an init event spelled "\\u0069nit" is read as init; a step_update carrying "init" and "result" is not', async ({ expect }) => {
    const root = pool.root();
    const events = join(root.dir, 'events.jsonl');
    writeFileSync(
      events,
      [
        '{"event": "\\u0069nit", "conversation_id": "conv-escaped"}',
        '{"event": "step_update", "step_update": {"text_delta": "init", "result": {"response": "not this one, it is nested"}}}',
        `{"event": "result", "result": {"response": "# unit_a result\\nConclusion: escaped init read\\n"}}`,
        '',
      ].join('\n'),
    );
    const run = await root.run({ env: { FAKE_AGY_EVENTS_FILE: events } });
    expect(run.code).toBe(0);
    expect(readState(run.stateDir, 'conversation-id')).toBe('conv-escaped\n');
    expect(readFileSync(root.result, 'utf8')).toBe('# unit_a result\nConclusion: escaped init read\n');
  });

  test('an empty tail: no conversation id, the FALLBACK says no output was captured, nothing echoed', async ({ expect }) => {
    const root = pool.root();
    const events = join(root.dir, 'events.jsonl');
    writeFileSync(events, '');
    const run = await root.run({ env: { FAKE_AGY_EVENTS_FILE: events } });
    expect(run.code).toBe(70);
    expect(existsSync(join(run.stateDir!, 'conversation-id'))).toBe(false);
    const reason = 'Agy exited 0 without a final result response';
    expect(readFileSync(root.result, 'utf8')).toBe(renderFallback({ unitId: 'unit_a', reason }));
    expect(readFileSync(root.result, 'utf8')).toContain('\n\nNo worker output was captured.\n');
    expect(run.stderr).toBe(`dispatch-task-agy: ${reason}\n`);
  });
});
