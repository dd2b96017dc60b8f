// A live view on a terminal (prun's batch panel, prun-monitor's unit lines): a frame of lines
// redrawn in place, a message line above it, the cursor hidden while it is up. Every escape
// sequence comes from ansi-escapes, colour from picocolors, and the columns of a line that is
// not plain Latin text from string-width, loaded only when such a line comes. A bin imports
// this module only once it draws (dynamically), so no other command pays for any of it.
import { beginSynchronizedOutput, cursorHide, cursorShow, endSynchronizedOutput, eraseLines } from 'ansi-escapes';
import picocolors from 'picocolors';
import { STOP_SIGNALS } from '../cli/index.js';

export interface TerminalSize {
  columns: number;
  rows: number;
}

/** What a frame is drawn on: a terminal stream (process.stderr), or anything that writes like one. */
export interface FrameStream {
  write(text: string): unknown;
  columns?: number;
  rows?: number;
}

export interface Frame {
  /** The terminal's size; one that reports none (a pty nobody sized) is taken as 80x24. */
  size(): TerminalSize;
  /**
   * Replace the frame on screen with `painted`; `plain` is the same text without colour, measured
   * and, for a line as wide as the terminal or wider, cut (without its colour) so it never wraps.
   * At most the terminal's rows less one are drawn (`withinRows`).
   */
  draw(painted: readonly string[], plain?: readonly string[]): void;
  /** A message line above the frame (kept in the scroll-back); the frame is drawn again on the next `draw`. */
  note(line: string): void;
  /** Erase the frame and show the cursor again; a later `draw` puts both back. */
  close(): void;
}

/** Colour always on: the caller has decided that this stream gets a live view (a terminal, no NO_COLOR, no agent). */
export const colours = picocolors.createColors(true);
export type Colours = typeof colours;

const DEFAULT_SIZE: TerminalSize = { columns: 80, rows: 24 };

/**
 * What erases a frame of `lines` lines that left the cursor at the start of the line below it,
 * ending at column 1 of the frame's first line. Line by line (ansi-escapes counts the cursor's
 * own line among the lines it erases): an erase to the end of the screen from the frame's corner
 * would push every old frame into tmux's scroll-back at every redraw.
 */
export function eraseFrame(lines: number): string {
  return lines > 0 ? eraseLines(lines + 1) : '';
}

/**
 * Printable ASCII and Latin-1 (but the soft hyphen, which takes no column) take one column a
 * character: ids, paths, models, the views' own text. Only a line with anything else asks
 * string-width, whose grapheme segmenter and emoji pattern cost about 40 ms of CPU to set up.
 */
export const ONE_COLUMN_EACH = /^[\x20-\x7e\xa0-\xac\xae-\xff]*$/;

/** At least the columns `text` takes, before string-width is loaded: two for anything wider than Latin-1. */
export function columnsAtMost(text: string): number {
  let columns = 0;
  for (const char of text) columns += ONE_COLUMN_EACH.test(char) ? 1 : 2;
  return columns;
}

let graphemes: Intl.Segmenter | null = null;

/**
 * `text` cut to at most `columns` columns by `width`, the last of them an ellipsis; measured a
 * grapheme at a time, since a code point alone can take fewer columns than with its neighbours
 * (U+2714 takes one, followed by the emoji selector U+FE0F two). The segmenter is made only for
 * a line beyond Latin-1.
 */
export function cutToColumns(text: string, columns: number, width: (text: string) => number): string {
  if (ONE_COLUMN_EACH.test(text)) return `${text.slice(0, columns - 1)}…`;
  graphemes ??= new Intl.Segmenter();
  let used = 0;
  let out = '';
  for (const { segment } of graphemes.segment(text)) {
    const w = width(segment);
    if (used + w > columns - 1) return `${out}…`;
    used += w;
    out += segment;
  }
  return out;
}

export interface ColumnMeasure {
  /** The columns `text` takes (never fewer, while string-width is still loading). */
  (text: string): number;
  /** Settles once string-width, if a line has asked for it, has loaded. */
  loaded(): Promise<void>;
}

/**
 * The columns of a line: its length for printable Latin text, else string-width's count, which
 * is loaded the first time such a line is measured. Until it has (by the next frame, a second
 * later), such a line is measured by `columnsAtMost`, so it is cut early rather than wrapped.
 */
export function columnMeasure(): ColumnMeasure {
  let stringWidth: ((text: string) => number) | null = null;
  let loading: Promise<void> | null = null;
  const width = (text: string): number => {
    if (ONE_COLUMN_EACH.test(text)) return text.length;
    if (stringWidth !== null) return stringWidth(text);
    loading ??= import('string-width').then(
      (loaded) => {
        stringWidth = loaded.default;
      },
      // Never expected: the estimate stays, and no line wraps.
      () => undefined,
    );
    return columnsAtMost(text);
  };
  return Object.assign(width, { loaded: async () => loading ?? undefined });
}

/**
 * At most `rows - 1` of `lines` (the cursor's line stays free): a frame as tall as the terminal
 * cannot be erased line by line, since the cursor cannot move above the top row, so every
 * redraw would push its first lines into the scroll-back. The lines beyond are told on the last
 * line kept: `… N more`.
 */
export function withinRows(lines: readonly string[], rows: number): readonly string[] {
  const room = Math.max(1, rows - 1);
  if (lines.length <= room) return lines;
  const kept = lines.slice(0, room - 1);
  return [...kept, `… ${lines.length - kept.length} more`];
}

/** A frame on `stream`, drawn by `draw`; nothing is written until then. */
export function openFrame(stream: FrameStream): Frame {
  const size = (): TerminalSize => ({
    columns: (stream.columns ?? 0) > 0 ? stream.columns! : DEFAULT_SIZE.columns,
    rows: (stream.rows ?? 0) > 0 ? stream.rows! : DEFAULT_SIZE.rows,
  });
  const width = columnMeasure();

  /** Lines of the frame now on screen (0: none), the last frame drawn, and whether the cursor is hidden. */
  let drawn = 0;
  let last: { painted: readonly string[]; plain: readonly string[] | undefined } | null = null;
  let hidden = false;

  // A process that ends with the cursor hidden gives it back: at exit (an error path,
  // process.exit), and when a signal would end it that nothing else handles (Ctrl-C in
  // `prun status --watch`): the cursor is shown, and the signal's default action then ends
  // the process, as it would have (the way signal-exit does it).
  const showOnExit = (): void => {
    stream.write(cursorShow);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 1) return;
    stream.write(cursor(false));
    process.kill(process.pid, signal);
  };
  // Ctrl-Z: a stopped process must not leave the shell prompt without a cursor. Handling SIGTSTP
  // takes over the stop: the frame is erased, the cursor shown, the process stops itself, and
  // `fg` (SIGCONT) draws the frame again, cursor hidden.
  const onSuspend = (): void => {
    const again = last;
    close();
    if (again !== null) process.once('SIGCONT', () => draw(again.painted, again.plain));
    process.kill(process.pid, 'SIGSTOP');
  };
  /** The sequence that hides or shows the cursor, if it is not so already. */
  const cursor = (hide: boolean): string => {
    if (hidden === hide) return '';
    hidden = hide;
    const listen = hide ? process.on.bind(process) : process.off.bind(process);
    listen('exit', showOnExit);
    // The signals whose default action ends a process at a terminal (Ctrl-C, kill, a closed terminal).
    for (const signal of STOP_SIGNALS) listen(signal, onSignal);
    listen('SIGTSTP', onSuspend);
    return hide ? cursorHide : cursorShow;
  };

  const erase = (): string => {
    const sequence = eraseFrame(drawn);
    drawn = 0;
    return sequence;
  };

  const draw = (painted: readonly string[], plain?: readonly string[]): void => {
    // Escape codes take no columns but cannot be cut through: a line too wide is cut on its plain text.
    const { columns, rows } = size();
    const fitted = painted.map((line, i) => {
      const text = plain?.[i] ?? line;
      return width(text) >= columns ? cutToColumns(text, columns, width) : line;
    });
    const lines = withinRows(fitted, rows);
    // Synchronized output: the terminal shows the frame whole, never half drawn (one without it ignores both).
    stream.write(`${beginSynchronizedOutput}${cursor(true)}${erase()}${lines.map((line) => `${line}\n`).join('')}${endSynchronizedOutput}`);
    drawn = lines.length;
    last = { painted, plain };
  };

  const close = (): void => {
    last = null;
    const sequence = `${erase()}${cursor(false)}`;
    if (sequence !== '') stream.write(sequence);
  };

  return {
    size,
    draw,
    note(line) {
      stream.write(`${erase()}${line}\n`);
    },
    close,
  };
}
