// Drawing the panel on a terminal: redrawn in place by the few standard escape sequences below,
// picocolors for colour, and string-width for the columns of a line that is not plain Latin
// text. Each is loaded on first use only, so no other command pays for it (package README,
// "Terminal libraries").
import { STOP_SIGNALS } from '@prun/kit/cli';
import type { Paint, PanelSize } from './panel.js';

export interface PanelTerminal {
  paint: Paint;
  size: () => PanelSize;
  /** Replace the panel with `painted`; `plain` is the same text without colour, used where a line must be cut. */
  draw: (painted: readonly string[], plain: readonly string[]) => void;
  /** A message line above the panel (kept in the scroll-back); the panel is drawn again on the next `draw`. */
  note: (line: string) => void;
  /** Remove the panel and give the cursor back. */
  close: () => void;
}

/** A terminal that reports no size (a pty nobody sized) is taken as 80x24. */
const DEFAULT_SIZE: PanelSize = { columns: 80, rows: 24 };

const CSI = '\u001b[';
const HIDE_CURSOR = `${CSI}?25l`;
const SHOW_CURSOR = `${CSI}?25h`;
// Synchronized output (DEC private mode 2026): the terminal shows a frame whole, never half
// drawn; a terminal without it ignores both.
const BEGIN_FRAME = `${CSI}?2026h`;
const END_FRAME = `${CSI}?2026l`;
const ERASE_LINE = `${CSI}2K`;
const LINE_UP = `${CSI}1A`;

/**
 * Erase the last frame's `lines` lines, from the cursor (which a frame leaves at the start of
 * the line below it), and end at column 1 of the first. Line by line, as log-update does: an
 * erase to the end of the screen from its top-left corner would push the old frame into tmux's
 * scroll-back at every redraw.
 */
const eraseFrame = (lines: number): string => `${ERASE_LINE}${`${LINE_UP}${ERASE_LINE}`.repeat(lines)}\r`;

/**
 * Printable ASCII and Latin-1 (but the soft hyphen, which takes no column) take one column a
 * character: the panel's own text, the ids and the models. Only a line with anything else asks
 * string-width, whose grapheme segmenter and emoji pattern cost about 40 ms of CPU to set up.
 */
const ONE_COLUMN_EACH = /^[\x20-\x7e\xa0-\xac\xae-\xff]*$/;

/** At least the columns `text` takes, before string-width is loaded: two for anything wider than Latin-1. */
function columnsAtMost(text: string): number {
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

export async function openTerminal(stream: NodeJS.WriteStream): Promise<PanelTerminal> {
  const { createColors } = await import('picocolors');
  const size = (): PanelSize => ({
    columns: stream.columns > 0 ? stream.columns : DEFAULT_SIZE.columns,
    rows: stream.rows > 0 ? stream.rows : DEFAULT_SIZE.rows,
  });
  const colours = createColors(true);
  const paint: Paint = {
    green: colours.green,
    red: colours.red,
    yellow: colours.yellow,
    cyan: colours.cyan,
    dim: colours.dim,
    bold: colours.bold,
  };

  // string-width, once a line needs it: until it has loaded (by the next frame, a second later),
  // such a line is measured by `columnsAtMost`, so it is cut early rather than wrapped.
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

  /** Lines of the panel now on screen (0: none), and whether the cursor is hidden. */
  let drawn = 0;
  let hidden = false;
  // A process that ends with the cursor hidden gives it back: at exit (an error path,
  // process.exit), and when a signal would end it that nothing else here handles (Ctrl-C in
  // `prun status --watch`): the cursor is shown, and the signal's default action then ends
  // the process, as it would have (the way signal-exit, which log-update used, does it).
  const showOnExit = (): void => {
    stream.write(SHOW_CURSOR);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 1) return;
    stream.write(cursor(false));
    process.kill(process.pid, signal);
  };
  /** The sequence that hides or shows the cursor, if it is not so already. */
  const cursor = (hide: boolean): string => {
    if (hidden === hide) return '';
    hidden = hide;
    const listen = hide ? process.on.bind(process) : process.off.bind(process);
    listen('exit', showOnExit);
    // The signals whose default action ends a process at a terminal (Ctrl-C, kill, a closed terminal).
    for (const signal of STOP_SIGNALS) listen(signal, onSignal);
    return hide ? HIDE_CURSOR : SHOW_CURSOR;
  };

  const erase = (): string => {
    const sequence = drawn > 0 ? eraseFrame(drawn) : '';
    drawn = 0;
    return sequence;
  };

  const draw = (painted: readonly string[], plain: readonly string[]): void => {
    // A line wider than the terminal would wrap and break the redraw: cut it (its plain text;
    // escape codes take no columns but cannot be cut through).
    const columns = size().columns;
    const lines = painted.map((line, i) => {
      const text = plain[i] ?? line;
      return width(text) >= columns ? cutToColumns(text, columns, width) : line;
    });
    stream.write(`${BEGIN_FRAME}${cursor(true)}${erase()}${lines.map((line) => `${line}\n`).join('')}${END_FRAME}`);
    drawn = lines.length;
  };

  return {
    paint,
    size,
    draw,
    note(line) {
      stream.write(`${erase()}${line}\n`);
    },
    close() {
      const sequence = `${erase()}${cursor(false)}`;
      if (sequence !== '') stream.write(sequence);
    },
  };
}
