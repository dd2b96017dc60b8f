/**
 * The bounded end-of-unit reading (src/capture-read.ts) against the whole-text functions it
 * replaces: for random captures (line ends of every kind, Python whitespace at both ends,
 * multi-byte characters and invalid UTF-8, events written with escapes) read through buffers
 * small enough to cut lines, CRLF pairs and characters, each answer must be the one
 * readEventStream, lastLines and renderFallback give for the capture's first maxBytes as text.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readHead } from '@prun/kit/fs';
import { renderFallback } from '@prun/unit-state';
import { afterAll, describe, expect, test } from 'vitest';
import { echoLastLines, publishCaptureFallback, readEventStreamFile } from '../src/capture-read.js';
import { lastLines, readEventStream } from '../src/decide.js';
import { universalNewlines } from '../src/validate.js';

const dir = mkdtempSync(join(tmpdir(), 'prun-capture-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const seed = Number(process.env.CAPTURE_READ_SEED ?? Date.now() % 2 ** 31);

// Pieces a capture is made of, as bytes: what a splitter, a stripper or a decoder can get wrong.
const PIECES: readonly (string | number[])[] = [
  'a',
  'xyz',
  ' ',
  '\t',
  '\n',
  '\r',
  '\r\n',
  '\v',
  '\f',
  '\x1c',
  '\x1f',
  '\x85',
  '\xa0',
  '\u2028',
  '\u2029',
  '\u3000',
  '\u202f',
  '\u00e9',
  '\u4e2d',
  '\u{1f600}',
  '{',
  '"',
  '\\u',
  '{"event": "init", "conversation_id": "conv-1"}',
  '{"event": "init", "conversation_id": "  "}',
  '{"event": "\\u0069nit", "conversation_id": "conv-escaped"}',
  '{"\\u0065vent": "result", "result": {"status": "ERROR", "error": "x"}}',
  '{"event": "result", "result": {"response": "# unit_a result\\nConclusion: complete and long enough"}}',
  '{"event": "result", "result": {"status": null, "error": null}}',
  '{"event": "step_update", "step_update": {"step_type": "tool", "tool_info": {"result": "r"}}}',
  '  {"event": "result", "result": {"status": "SUCCESS", "x": NaN}}',
  '[{"event": "init", "conversation_id": "in-a-list"}]',
  // Invalid UTF-8: lone continuation bytes, cut sequences, bytes that never start one.
  [0x80],
  [0xbf, 0xbf],
  [0xc2],
  [0xe2, 0x80],
  [0xf0, 0x9f, 0x98],
  [0xed, 0xa0, 0x80],
  [0xe0, 0x80, 0x80],
  [0xff],
  [0xc0, 0x85],
];

const pieceBytes = (piece: string | number[]): Buffer => (typeof piece === 'string' ? Buffer.from(piece, 'utf8') : Buffer.from(piece));
const capture = fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((pieces) => Buffer.concat(pieces.map(pieceBytes)));
const bufferBytes = fc.constantFrom(16, 17, 19, 23, 32, 64, 4096);

let count = 0;
function file(bytes: Buffer): string {
  count += 1;
  const path = join(dir, `capture-${count}`);
  writeFileSync(path, bytes);
  return path;
}

/** The tail echo as the dispatcher wrote it line by line. */
const echoOf = (lines: string[]): string => lines.map((line) => `${line}\n`).join('');

/** What the dispatcher read before: the first maxBytes as text (readHead), '' when unreadable. */
function asText(path: string, maxBytes: number): string {
  const read = readHead(path, { maxBytes });
  return read.ok ? read.text : '';
}

describe(`capture-read against the whole-text functions (seed ${seed})`, () => {
  test('readEventStreamFile is readEventStream of the text', () => {
    fc.assert(
      fc.property(capture, bufferBytes, fc.nat({ max: 8 }), (bytes, size, cut) => {
        const path = file(bytes);
        const maxBytes = cut === 0 ? 256 : Math.max(0, bytes.length - cut);
        expect(readEventStreamFile(path, { maxBytes, bufferBytes: size })).toEqual(readEventStream(asText(path, maxBytes)));
      }),
      { seed, numRuns: 600 },
    );
  });

  test('echoLastLines writes lastLines of the text, each line and its newline', () => {
    fc.assert(
      fc.property(capture, bufferBytes, fc.nat({ max: 8 }), fc.integer({ min: 1, max: 6 }), (bytes, size, cut, lines) => {
        const path = file(bytes);
        const maxBytes = cut === 0 ? 256 : Math.max(0, bytes.length - cut);
        const pieces: string[] = [];
        echoLastLines(path, { maxBytes, bufferBytes: size }, (text) => pieces.push(text), lines);
        expect(pieces.join('')).toBe(echoOf(lastLines(asText(path, maxBytes), lines)));
      }),
      { seed, numRuns: 600 },
    );
  });

  test('publishCaptureFallback writes renderFallback of the two texts, byte for byte, and leaves no temp file', () => {
    fc.assert(
      // Small buffers only: each capture's range starts after its stripped whitespace, so cuts land anywhere.
      fc.property(capture, capture, fc.constantFrom(16, 17, 19, 23), fc.nat({ max: 8 }), (out, err, size, cut) => {
        const stdoutPath = file(out);
        const stderrPath = file(err);
        const maxBytes = cut === 0 ? 256 : Math.max(0, Math.max(out.length, err.length) - cut);
        const result = join(dir, `result-${count}`, 'unit.md');
        publishCaptureFallback(result, { unitId: 'unit_a', reason: 'Agy exited with code 3', stdoutPath, stderrPath }, { maxBytes, bufferBytes: size }, {
          tag: 'dispatch-task-agy',
        });
        const expected = renderFallback({
          unitId: 'unit_a',
          reason: 'Agy exited with code 3',
          stdout: universalNewlines(asText(stdoutPath, maxBytes)),
          stderr: universalNewlines(asText(stderrPath, maxBytes)),
        });
        expect(readFileSync(result).equals(Buffer.from(expected, 'utf8'))).toBe(true);
        expect(readdirSync(join(dir, `result-${count}`))).toEqual(['unit.md']);
      }),
      { seed, numRuns: 400 },
    );
  });

  test('a CRLF, a UTF-8 sequence and an event cut exactly at every buffer boundary', () => {
    const init = '{"event": "init", "conversation_id": "conv-cut"}';
    for (let offset = 0; offset < 40; offset += 1) {
      const bytes = Buffer.from(`${'x'.repeat(offset)}\r\n\u2028${init}\r\n\u00e9\u{1f600}\r\r\n z\r\n`, 'utf8');
      const path = file(bytes);
      for (const size of [16, 17, 18, 19]) {
        const options = { maxBytes: 1024, bufferBytes: size };
        expect(readEventStreamFile(path, options)).toEqual(readEventStream(asText(path, 1024)));
        const pieces: string[] = [];
        echoLastLines(path, options, (text) => pieces.push(text), 80);
        expect(pieces.join('')).toBe(echoOf(lastLines(asText(path, 1024), 80)));
        const result = join(dir, `cut-${count}-${size}`, 'unit.md');
        publishCaptureFallback(result, { unitId: 'unit_a', reason: 'r', stdoutPath: path, stderrPath: path }, options, {});
        const text = universalNewlines(asText(path, 1024));
        expect(readFileSync(result, 'utf8')).toBe(renderFallback({ unitId: 'unit_a', reason: 'r', stdout: text, stderr: text }));
      }
    }
  });

  test('an absent capture and a directory in its place read as empty', () => {
    const missing = join(dir, 'missing');
    expect(readEventStreamFile(missing, { maxBytes: 256 })).toEqual(readEventStream(''));
    const echoed: string[] = [];
    echoLastLines(dir, { maxBytes: 256 }, (text) => echoed.push(text));
    echoLastLines(missing, { maxBytes: 256 }, (text) => echoed.push(text));
    expect(echoed).toEqual([]);
    const result = join(dir, 'empty-result', 'unit.md');
    publishCaptureFallback(result, { unitId: 'u1', reason: 'r', stdoutPath: missing, stderrPath: dir }, { maxBytes: 256 }, {});
    expect(readFileSync(result, 'utf8')).toBe(renderFallback({ unitId: 'u1', reason: 'r' }));
  });
});
