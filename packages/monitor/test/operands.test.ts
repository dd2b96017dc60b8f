import { describe, expect, it } from 'vitest';
import { BoundedLineSplitter, MAX_OPERAND_LINE_BYTES, classifyOperandLine } from '../src/operands.js';

function split(chunks: Array<string | Buffer>, maxBytes?: number): { lines: string[]; overlong: number[]; numbers: number[] } {
  const lines: string[] = [];
  const numbers: number[] = [];
  const overlong: number[] = [];
  const splitter = new BoundedLineSplitter(
    {
      line: (bytes, number) => {
        lines.push(bytes.toString('utf8'));
        numbers.push(number);
      },
      overlong: (number) => overlong.push(number),
    },
    maxBytes,
  );
  for (const chunk of chunks) splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  splitter.end();
  return { lines, overlong, numbers };
}

describe('BoundedLineSplitter', () => {
  it('splits lines across chunk boundaries, and an unterminated last line counts', () => {
    expect(split(['a', 'b\ncd', '\n\nef'])).toEqual({ lines: ['ab', 'cd', '', 'ef'], overlong: [], numbers: [1, 2, 3, 4] });
    expect(split(['x\n'])).toEqual({ lines: ['x'], overlong: [], numbers: [1] });
  });

  it('a line over the bound is reported once, as soon as it is known, and its bytes dropped', () => {
    const events: string[] = [];
    const splitter = new BoundedLineSplitter(
      { line: (bytes, n) => events.push(`line ${n} ${bytes.toString()}`), overlong: (n) => events.push(`overlong ${n}`) },
      4,
    );
    splitter.push(Buffer.from('ok\nabc'));
    splitter.push(Buffer.from('de'));
    // Reported before the line ends: a never-ending line is still told about.
    expect(events).toEqual(['line 1 ok', 'overlong 2']);
    splitter.push(Buffer.from('fgh'.repeat(100)));
    splitter.push(Buffer.from('ij\nnext\n'));
    splitter.end();
    expect(events).toEqual(['line 1 ok', 'overlong 2', 'line 3 next']);
  });

  it('a line of exactly the bound is kept', () => {
    expect(split(['abcd\nabcde\n'], 4)).toEqual({ lines: ['abcd'], overlong: [2], numbers: [1] });
    expect(split(['ab', 'cd', '\n'], 4).lines).toEqual(['abcd']);
  });

  it('an over-long last line without a newline is reported, not passed on', () => {
    expect(split(['abcdefgh'], 4)).toEqual({ lines: [], overlong: [1], numbers: [] });
  });

  it('never holds more than the bound, however long the line (work is one pass)', () => {
    let held = 0;
    const splitter = new BoundedLineSplitter({ line: (bytes) => (held = Math.max(held, bytes.length)), overlong: () => {} }, 16);
    const chunk = Buffer.alloc(1 << 16, 0x61);
    for (let i = 0; i < 64; i += 1) splitter.push(chunk);
    splitter.push(Buffer.from('\nshort\n'));
    splitter.end();
    expect(held).toBe(5);
    expect(MAX_OPERAND_LINE_BYTES).toBeGreaterThanOrEqual(4096 + 'STATE-DIR '.length + 1);
  });
});

describe('classifyOperandLine', () => {
  const of = (text: string | Buffer) => classifyOperandLine(typeof text === 'string' ? Buffer.from(text) : text);

  it('takes plain paths and STATE-DIR lines, drops a trailing CR, skips blank lines', () => {
    expect(of('/tmp/prun-task-x')).toEqual({ kind: 'operand', path: '/tmp/prun-task-x', fromStateDirLine: false });
    expect(of('relative/dir')).toEqual({ kind: 'operand', path: 'relative/dir', fromStateDirLine: false });
    expect(of('STATE-DIR /tmp/prun-task-x\r')).toEqual({ kind: 'operand', path: '/tmp/prun-task-x', fromStateDirLine: true });
    expect(of('-odd name with spaces')).toMatchObject({ kind: 'operand', path: '-odd name with spaces' });
    expect(of('')).toEqual({ kind: 'blank' });
    expect(of('  \r')).toEqual({ kind: 'blank' });
  });

  it('refuses lines that are neither a path nor a STATE-DIR line', () => {
    expect(of('STATE-DIR relative')).toMatchObject({ kind: 'refused', reason: expect.stringContaining('absolute') });
    expect(of('MONITOR-EVENT fail')).toMatchObject({ kind: 'refused', reason: expect.stringContaining('output line') });
    expect(of('DONE /tmp/r.md')).toMatchObject({ kind: 'refused' });
    expect(of('MODEL-RESOLVE gemini pro -> x')).toMatchObject({ kind: 'refused' });
    expect(of('dir\u0000x')).toMatchObject({ kind: 'refused', reason: expect.stringContaining('control') });
    expect(of('\u001b[2Jdir')).toMatchObject({ kind: 'refused' });
    expect(of('a\u2028b')).toMatchObject({ kind: 'refused' });
    expect(of('STATE-DIR /tmp/a\tb')).toMatchObject({ kind: 'refused' });
    expect(of(Buffer.from([0x2f, 0x74, 0xff, 0x78]))).toMatchObject({ kind: 'refused', reason: 'not UTF-8 text' });
  });

  it('keeps lower-case or unspaced words as paths', () => {
    expect(of('DONE')).toMatchObject({ kind: 'operand', path: 'DONE' });
    expect(of('Results dir')).toMatchObject({ kind: 'operand' });
    expect(of('A dir')).toMatchObject({ kind: 'operand' });
    expect(of('./DONE x')).toMatchObject({ kind: 'operand', path: './DONE x' });
    expect(of('état/unité')).toMatchObject({ kind: 'operand', path: 'état/unité' });
  });
});
