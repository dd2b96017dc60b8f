/**
 * The end-of-unit reading of the worker's two captures (`tail`, `tail.stderr-tmp`), in memory
 * bounded whatever their size (README, "How it works", steps 10-11): the event stream folded in
 * one pass with a reused buffer, the tail echo read from the file's end, the FALLBACK streamed
 * into the publisher's temp file. Every answer is the one the whole-text functions of decide.ts
 * and @prun/unit-state give for the file's first `maxBytes` decoded as UTF-8 (readHead's read):
 * a line break, a Python whitespace character and a line start are recognised in the bytes,
 * where their UTF-8 encodings (each starting with a non-continuation byte) are read the same by
 * a decoder whatever came before, and text is decoded only in pieces cut before a sequence start.
 */
import { closeSync, readSync } from 'node:fs';
import { openRegularFile } from '@prun/kit/fs';
import { PY_LINE_BREAK, PY_LINE_BREAK_CODE_POINTS, PY_WHITESPACE_CODE_POINTS } from '@prun/kit/py';
import { publishAtomic, writeFallback, type FallbackCapture, type PublishOptions } from '@prun/unit-state';
import { TAIL_ECHO_LINES, emptyReading, foldEventLine, type StreamReading } from './decide.js';
import { universalNewlines } from './validate.js';

/** The reused read buffer of one pass. */
export const CAPTURE_BUFFER_BYTES = 256 * 1024;

export interface CaptureReadOptions {
  /** Only the file's first maxBytes bytes are read, as `readHead` bounds them. */
  maxBytes: number;
  /** The size of the reused read buffer (tests make it small to cut lines and characters). */
  bufferBytes?: number;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const OPEN_BRACE = 0x7b;

/** A read of a capture failed after it was opened (readHead answers that with no text at all). */
class CaptureReadError extends Error {}

/** Fill `length` bytes of `buffer` from `position`, or throw when the file ends or a read fails first. */
function readFully(fd: number, buffer: Buffer, offset: number, length: number, position: number): void {
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = readSync(fd, buffer, offset + done, length - done, position + done);
    } catch (error) {
      throw new CaptureReadError(String(error));
    }
    if (n === 0) throw new CaptureReadError('the capture shrank while it was read');
    done += n;
  }
}

function bufferSize(options: CaptureReadOptions): number {
  // Room for a whole UTF-8 sequence carried over from one piece to the next.
  return Math.max(16, options.bufferBytes ?? CAPTURE_BUFFER_BYTES);
}

// --- the event stream -----------------------------------------------------------------------------

const BACKSLASH_U = Buffer.from('\\u');
const EVENT_KEY = Buffer.from('"event"');
const INIT_VALUE = Buffer.from('"init"');
const RESULT_VALUE = Buffer.from('"result"');

/**
 * Whether a line can be an init or result event, exactly: JSON spells a letter as itself or as a
 * `\u` escape (no other escape gives a letter), so a line without a backslash-u that parses to
 * `{"event": "init"|"result", ...}` holds `"event"` and `"init"` or `"result"` literally, and its
 * first byte after spaces and tabs is `{` (the only JSON whitespace a line can hold).
 */
function mayBeEvent(line: Buffer): boolean {
  let first = 0;
  while (first < line.length && (line[first] === SPACE || line[first] === TAB)) first += 1;
  if (line[first] !== OPEN_BRACE) return false;
  if (line.includes(BACKSLASH_U)) return true;
  return line.includes(EVENT_KEY) && (line.includes(INIT_VALUE) || line.includes(RESULT_VALUE));
}

/**
 * The bytes of a line that crosses a buffer boundary, kept until its end; one that already
 * cannot be an event (its first byte after blanks is not `{`) is no longer kept.
 */
class LineCarry {
  private bytes = Buffer.allocUnsafe(0);
  length = 0;
  private dropped = false;

  get pending(): boolean {
    return this.length > 0 || this.dropped;
  }

  append(from: Buffer, start: number, end: number): void {
    if (this.dropped || start === end) return;
    const need = this.length + end - start;
    if (need > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, 2 * this.bytes.length, 4096));
      this.bytes.copy(grown, 0, 0, this.length);
      this.bytes = grown;
    }
    from.copy(this.bytes, this.length, start, end);
    this.length = need;
    let first = 0;
    while (first < this.length && (this.bytes[first] === SPACE || this.bytes[first] === TAB)) first += 1;
    if (first < this.length && this.bytes[first] !== OPEN_BRACE) {
      this.dropped = true;
      this.length = 0;
    }
  }

  /** The whole line, or null when it was dropped; the carry is empty afterwards. */
  take(): Buffer | null {
    const line = this.dropped ? null : this.bytes.subarray(0, this.length);
    this.dropped = false;
    this.length = 0;
    return line;
  }
}

/**
 * decide.ts's `readEventStream` of the capture's first `maxBytes`, read from the file in one pass
 * with a reused buffer, line by line (universal newlines: `\r\n`, `\r`, `\n`), only the lines
 * that can be events decoded and parsed. Memory: the buffer plus the longest line that crosses
 * a buffer boundary and can be an event. A capture that is absent, not a regular file (a FIFO
 * put in its place), or fails to read gives the empty reading, as an empty text does.
 */
export function readEventStreamFile(path: string, options: CaptureReadOptions): StreamReading {
  const file = openRegularFile(path);
  if (!file.ok) return emptyReading();
  try {
    return foldLines(file.fd, options.maxBytes, bufferSize(options));
  } catch (error) {
    if (error instanceof CaptureReadError) return emptyReading();
    throw error;
  } finally {
    closeSync(file.fd);
  }
}

function foldLines(fd: number, maxBytes: number, size: number): StreamReading {
  const reading = emptyReading();
  const fold = (line: Buffer | null): void => {
    if (line !== null && mayBeEvent(line)) foldEventLine(reading, line.toString('utf8'));
  };
  const buffer = Buffer.allocUnsafe(size);
  const carry = new LineCarry();
  let position = 0;
  // The previous piece ended in CR: a LF first in this one is the same line end.
  let afterCr = false;
  while (position < maxBytes) {
    let n: number;
    try {
      n = readSync(fd, buffer, 0, Math.min(size, maxBytes - position), position);
    } catch (error) {
      throw new CaptureReadError(String(error));
    }
    if (n === 0) break;
    position += n;
    const piece = buffer.subarray(0, n);
    let start = 0;
    if (afterCr) {
      afterCr = false;
      if (piece[0] === LF) start = 1;
    }
    let nextLf = -2;
    let nextCr = -2;
    for (;;) {
      if (nextLf !== -1 && nextLf < start) nextLf = piece.indexOf(LF, start);
      if (nextCr !== -1 && nextCr < start) nextCr = piece.indexOf(CR, start);
      const end = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (end === -1) break;
      if (carry.pending) {
        carry.append(piece, start, end);
        fold(carry.take());
      } else {
        fold(piece.subarray(start, end));
      }
      if (piece[end] === LF) start = end + 1;
      else if (end + 1 === n) {
        afterCr = true;
        start = n;
      } else start = piece[end + 1] === LF ? end + 2 : end + 1;
    }
    carry.append(piece, start, n);
  }
  if (carry.pending) fold(carry.take());
  return reading;
}

// --- characters recognised in the bytes -------------------------------------------------------------

/** A set of characters by their UTF-8 encodings, matched in bytes read through a ByteWindow. */
class Utf8CharSet {
  private readonly byFirst = new Map<number, Buffer[]>();
  private readonly byLast = new Map<number, Buffer[]>();
  /** 1 for a byte that ends a character of the set: the cheap test before `endingAt`. */
  readonly lastBytes = new Uint8Array(256);

  constructor(codePoints: readonly number[]) {
    for (const code of codePoints) {
      const bytes = Buffer.from(String.fromCodePoint(code), 'utf8');
      const add = (map: Map<number, Buffer[]>, key: number): void => {
        map.set(key, [...(map.get(key) ?? []), bytes]);
      };
      add(this.byFirst, bytes[0]!);
      add(this.byLast, bytes[bytes.length - 1]!);
      this.lastBytes[bytes[bytes.length - 1]!] = 1;
    }
  }

  /** The length of a character of the set at `pos` (all of it before `end`), else 0. */
  startingAt(window: ByteWindow, pos: number, end: number): number {
    for (const bytes of this.byFirst.get(window.at(pos)) ?? []) {
      if (pos + bytes.length <= end && bytes.every((byte, k) => window.at(pos + k) === byte)) return bytes.length;
    }
    return 0;
  }

  /** The length of a character of the set that ends just before `pos` (all of it at or after `floor`), else 0. */
  endingAt(window: ByteWindow, pos: number, floor: number): number {
    for (const bytes of this.byLast.get(window.at(pos - 1)) ?? []) {
      const from = pos - bytes.length;
      if (from >= floor && bytes.every((byte, k) => window.at(from + k) === byte)) return bytes.length;
    }
    return 0;
  }
}

const PY_WHITESPACE_CHARS = new Utf8CharSet(PY_WHITESPACE_CODE_POINTS);
const PY_LINE_BREAK_CHARS = new Utf8CharSet(PY_LINE_BREAK_CODE_POINTS);

/** Bytes of a file at any position, through one reused block loaded around the position asked for. */
class ByteWindow {
  private readonly block: Buffer;
  private from = 0;
  private to = 0;

  constructor(
    private readonly fd: number,
    size: number,
    private readonly end: number,
    private readonly backward: boolean,
  ) {
    this.block = Buffer.allocUnsafe(size);
  }

  at(pos: number): number {
    if (pos < this.from || pos >= this.to) {
      // Walking backward, the block ends at the position; walking forward, it starts there.
      this.from = this.backward ? Math.max(0, pos + 1 - this.block.length) : pos;
      this.to = Math.min(this.end, this.from + this.block.length);
      readFully(this.fd, this.block, 0, this.to - this.from, this.from);
    }
    return this.block[pos - this.from]!;
  }
}

/**
 * Bytes [start, end) of a file decoded as UTF-8 in pieces, as one decode of the whole range
 * would give them: each piece is cut before an unfinished sequence (`start` must be where a
 * character starts), and a CR that ends a piece is held for the next, so a CRLF is never split
 * between two pieces.
 */
function decodeRange(fd: number, start: number, end: number, size: number, emit: (text: string) => void): void {
  const buffer = Buffer.allocUnsafe(size);
  let position = start;
  let carried = 0;
  let pendingCr = false;
  while (position < end) {
    const want = Math.min(buffer.length - carried, end - position);
    readFully(fd, buffer, carried, want, position);
    position += want;
    const length = carried + want;
    const last = position === end;
    const cut = last ? length : cutBeforeUnfinished(buffer, length);
    let text = buffer.toString('utf8', 0, cut);
    buffer.copy(buffer, 0, cut, length);
    carried = length - cut;
    if (pendingCr) text = `\r${text}`;
    pendingCr = !last && text.endsWith('\r');
    if (pendingCr) text = text.slice(0, -1);
    if (text !== '') emit(text);
  }
}

/**
 * Where to cut `length` decoded bytes so no UTF-8 sequence is split: before a sequence start
 * among the last three bytes, else at the end (a start four or more bytes back is complete, or
 * its extra bytes decode alone either way).
 */
function cutBeforeUnfinished(buffer: Buffer, length: number): number {
  for (let at = length - 1; at >= Math.max(0, length - 3); at -= 1) {
    const byte = buffer[at]!;
    if (byte < 0x80) return length;
    if (byte >= 0xc0) return at;
  }
  return length;
}

// --- the tail echo ----------------------------------------------------------------------------------

/**
 * The tail echo of a capture, streamed: `write` gets, in pieces, exactly the text of decide.ts's
 * `lastLines` of the capture's first `maxBytes` (Python's `str.splitlines()`, the last `count`),
 * each line followed by `\n`. The line breaks are counted backward from the file's end, and
 * only the echoed range is read, through one buffer, so even a last line of hundreds of MiB
 * costs no more than the buffer. An unreadable capture echoes nothing, as an empty text does
 * (a read that fails half-way ends the echo there).
 */
export function echoLastLines(path: string, options: CaptureReadOptions, write: (text: string) => void, count: number = TAIL_ECHO_LINES): void {
  const file = openRegularFile(path);
  if (!file.ok) return;
  try {
    const end = Math.min(file.size, options.maxBytes);
    const size = bufferSize(options);
    const start = startOfLastLines(new ByteWindow(file.fd, size, end, true), end, count);
    let endsWithBreak = true;
    decodeRange(file.fd, start, end, size, (text) => {
      write(text.replace(PY_LINE_BREAKS, '\n'));
      endsWithBreak = PY_LINE_BREAK_AT_END.test(text);
    });
    // str.splitlines() drops a final line break and the echo ends every line with one.
    if (!endsWithBreak) write('\n');
  } catch (error) {
    if (!(error instanceof CaptureReadError)) throw error;
  } finally {
    closeSync(file.fd);
  }
}

const PY_LINE_BREAKS = new RegExp(PY_LINE_BREAK.source, 'g');
const PY_LINE_BREAK_AT_END = new RegExp(`(?:${PY_LINE_BREAK.source})$`);

/** The length of the line break that ends just before `pos` (`\r\n` is one), else 0. */
function lineBreakBefore(window: ByteWindow, pos: number): number {
  if (pos >= 2 && window.at(pos - 1) === LF && window.at(pos - 2) === CR) return 2;
  return PY_LINE_BREAK_CHARS.endingAt(window, pos, 0);
}

/** Where the last `count` lines of the first `end` bytes start (a final line break ends the last line, as str.splitlines has it). */
function startOfLastLines(window: ByteWindow, end: number, count: number): number {
  if (end === 0 || count <= 0) return end;
  let pos = end - lineBreakBefore(window, end);
  let found = 0;
  while (pos > 0) {
    // Most bytes end no line break: one table look-up tells.
    const length = PY_LINE_BREAK_CHARS.lastBytes[window.at(pos - 1)] === 1 ? lineBreakBefore(window, pos) : 0;
    if (length === 0) {
      pos -= 1;
      continue;
    }
    found += 1;
    if (found === count) return pos;
    pos -= length;
  }
  return 0;
}

// --- the FALLBACK -----------------------------------------------------------------------------------

/**
 * A capture as a FALLBACK section, streamed: its Python-stripped range is found by walking over
 * whitespace from each end, then `writeTo` decodes the range piece by piece (each piece cut before
 * an unfinished UTF-8 sequence) with universal newlines. A capture that cannot be opened or read
 * is empty, as readHead's failed read gives an empty text.
 */
class StreamedCapture implements FallbackCapture {
  private readonly fd: number | null;
  private start = 0;
  private end = 0;
  /** A read failed while the section was written: it is empty from now on (the publish is retried). */
  failed = false;

  constructor(
    path: string,
    private readonly options: CaptureReadOptions,
  ) {
    const file = openRegularFile(path);
    this.fd = file.ok ? file.fd : null;
    if (this.fd === null || !file.ok) return;
    try {
      this.findStrippedRange(Math.min(file.size, options.maxBytes));
    } catch (error) {
      if (!(error instanceof CaptureReadError)) throw error;
      this.failed = true;
    }
  }

  get empty(): boolean {
    return this.failed || this.start >= this.end;
  }

  private findStrippedRange(size: number): void {
    const fd = this.fd!;
    const forward = new ByteWindow(fd, bufferSize(this.options), size, false);
    let start = 0;
    for (let length; start < size && (length = PY_WHITESPACE_CHARS.startingAt(forward, start, size)) > 0; ) start += length;
    let end = size;
    if (start < size) {
      const backward = new ByteWindow(fd, bufferSize(this.options), size, true);
      for (let length; end > start && (length = PY_WHITESPACE_CHARS.endingAt(backward, end, start)) > 0; ) end -= length;
    }
    this.start = start;
    this.end = end;
  }

  writeTo(write: (piece: string) => void): void {
    if (this.empty) return;
    try {
      decodeRange(this.fd!, this.start, this.end, bufferSize(this.options), (text) => write(universalNewlines(text)));
    } catch (error) {
      if (error instanceof CaptureReadError) this.failed = true;
      throw error;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
  }
}

export interface CaptureFallback {
  unitId: string;
  /** One line: why no result was written. */
  reason: string;
  /** The worker's stdout capture (`tail`). */
  stdoutPath: string;
  /** The worker's stderr capture (`tail.stderr-tmp`). */
  stderrPath: string;
}

/**
 * Publish the FALLBACK for two capture files with `publishAtomic`, streamed into its temp file:
 * byte for byte `renderFallback` of the captures' first `maxBytes` as text. A capture whose read
 * fails mid-way is published as empty, as readHead's failed read gives an empty text (the
 * publish starts again, its first temp file removed).
 */
export function publishCaptureFallback(
  resultPath: string,
  fallback: CaptureFallback,
  read: CaptureReadOptions,
  publish: PublishOptions,
): void {
  const stdout = new StreamedCapture(fallback.stdoutPath, read);
  const stderr = new StreamedCapture(fallback.stderrPath, read);
  try {
    for (;;) {
      try {
        publishAtomic(resultPath, (write) => writeFallback({ unitId: fallback.unitId, reason: fallback.reason, stdout, stderr }, write), publish);
        return;
      } catch (error) {
        // Each capture fails at most once: the next attempt writes it as empty.
        if (!(error instanceof CaptureReadError)) throw error;
      }
    }
  } finally {
    stdout.close();
    stderr.close();
  }
}
