import { isUtf8 } from 'node:buffer';
import { isAbsolute } from 'node:path';
import { hasControlCharacter } from '@prun/kit/cli';
import { STATE_DIR_LINE_PREFIX, parseOperandLine } from '@prun/unit-state';

/**
 * The longest stdin line read as an operand, in bytes. Linux refuses paths of 4096 bytes or
 * more (PATH_MAX), so no usable operand, even with its `STATE-DIR ` prefix and a CR, comes
 * near twice that; a longer line is skipped as it streams past, never held in memory.
 */
export const MAX_OPERAND_LINE_BYTES = 8192;

export type OperandLine =
  | { kind: 'operand'; path: string; fromStateDirLine: boolean }
  | { kind: 'blank' }
  | { kind: 'refused'; reason: string };

// Another tool's protocol line (`MONITOR-EVENT fail`, `DONE /x`, `MODEL-RESOLVE ...`): an
// upper-case word of two or more characters, then a space. Dispatchers print only
// `STATE-DIR <abs path>`; a directory really named so is still reachable as `./NAME`.
const PROTOCOL_LINE = /^[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)* /;

/**
 * What one stdin line is: a plain path, a `STATE-DIR <path>` line as dispatchers print it
 * (the path must be absolute, as theirs are), a blank line (skipped), or refused with the
 * reason. A trailing CR is dropped. The bytes are the line without its newline.
 */
export function classifyOperandLine(bytes: Uint8Array): OperandLine {
  if (!isUtf8(bytes)) return { kind: 'refused', reason: 'not UTF-8 text' };
  const line = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const path = parseOperandLine(line);
  if (path === null) return { kind: 'blank' };
  if (hasControlCharacter(path)) return { kind: 'refused', reason: 'holds a control character' };
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (text.startsWith(STATE_DIR_LINE_PREFIX)) {
    if (!isAbsolute(path)) return { kind: 'refused', reason: 'a STATE-DIR line must name an absolute path' };
    return { kind: 'operand', path, fromStateDirLine: true };
  }
  if (PROTOCOL_LINE.test(path)) return { kind: 'refused', reason: 'looks like another tool\'s output line, not a path' };
  return { kind: 'operand', path, fromStateDirLine: false };
}

export interface LineSink {
  /** One complete line (without `\n`), at most `maxBytes` long; `number` counts from 1. */
  line(bytes: Buffer, number: number): void;
  /** A line longer than `maxBytes`: reported once, as soon as it is known; its bytes are dropped. */
  overlong(number: number): void;
}

/**
 * Splits a byte stream into lines in one pass, holding at most `maxBytes` of the current line:
 * the work is linear in the input and the memory bounded, however long a line is. A final
 * line without a newline counts as a line.
 */
export class BoundedLineSplitter {
  #held: Buffer[] = [];
  #heldBytes = 0;
  #skipping = false;
  #number = 1;

  constructor(
    private readonly sink: LineSink,
    private readonly maxBytes: number = MAX_OPERAND_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(0x0a, from);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk, from, end);
      if (newline === -1) return;
      this.#finishLine();
      from = newline + 1;
    }
  }

  /** The input ended: a pending unterminated line is a line. */
  end(): void {
    if (this.#heldBytes > 0 || this.#skipping) this.#finishLine();
  }

  #take(chunk: Buffer, from: number, end: number): void {
    if (this.#skipping || end === from) return;
    if (this.#heldBytes + (end - from) > this.maxBytes) {
      this.#skipping = true;
      this.#held = [];
      this.#heldBytes = 0;
      this.sink.overlong(this.#number);
      return;
    }
    // A copy: the stream may reuse its chunk, and a short slice must not pin a large one.
    this.#held.push(Buffer.from(chunk.subarray(from, end)));
    this.#heldBytes += end - from;
  }

  #finishLine(): void {
    const number = this.#number;
    this.#number += 1;
    if (this.#skipping) {
      this.#skipping = false;
      return;
    }
    const bytes = this.#held.length === 1 ? this.#held[0]! : Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    this.sink.line(bytes, number);
  }
}
