// The terminal module's pure parts, and the frame writer on a stream that records what it is sent.
// (The frames on a real terminal, a tmux pane, are tested through prun's panel and prun-monitor's view.)
import fc from 'fast-check';
import stringWidth from 'string-width';
import { afterEach, describe, expect, it } from 'vitest';
import { columnMeasure, columnsAtMost, cutToColumns, eraseFrame, openFrame, withinRows, type Frame } from '@prun/kit/terminal';

const ESC = '\u001b';

describe('eraseFrame', () => {
  it('erases a frame of n lines line by line from the line below it: n + 1 lines erased, n up, column 1', () => {
    expect(eraseFrame(0)).toBe('');
    expect(eraseFrame(1)).toBe(`${ESC}[2K${ESC}[1A${ESC}[2K${ESC}[G`);
    expect(eraseFrame(3)).toBe(`${ESC}[2K${`${ESC}[1A${ESC}[2K`.repeat(3)}${ESC}[G`);
    // Never an erase to the end of the screen (ESC[J), which tmux answers at the pane's top-left
    // corner by moving the screen into its scroll-back.
    expect(eraseFrame(5)).not.toContain(`${ESC}[J`);
  });
});

describe('cutToColumns', () => {
  it('cuts by graphemes, so a line never takes more columns than it has', () => {
    // U+2714 takes one column, with the emoji selector after it two: a cut a code point at a time
    // would count 30 of them as 30 columns and leave a line of 60 that wraps.
    const checks = '\u2714\ufe0f'.repeat(30);
    const cut = cutToColumns(checks, 40, stringWidth);
    expect(cut).toBe(`${'\u2714\ufe0f'.repeat(19)}\u2026`);
    expect(stringWidth(cut)).toBeLessThanOrEqual(40);
    expect(cutToColumns('x'.repeat(60), 40, stringWidth)).toBe(`${'x'.repeat(39)}\u2026`);
    expect(cutToColumns('\u6f22'.repeat(30), 40, stringWidth)).toBe(`${'\u6f22'.repeat(19)}\u2026`);
    expect(cutToColumns('e\u0301'.repeat(60), 40, stringWidth)).toBe(`${'e\u0301'.repeat(39)}\u2026`);
  });

  it('never leaves more columns than asked, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), fc.integer({ min: 2, max: 60 }), (text, columns) => {
        expect(stringWidth(cutToColumns(text, columns, stringWidth))).toBeLessThanOrEqual(columns);
      }),
    );
  });
});

describe('withinRows', () => {
  it('keeps a frame to the rows less one, the lines beyond told as a count on the last line kept', () => {
    const lines = ['a', 'b', 'c', 'd', 'e'];
    expect(withinRows(lines, 6)).toEqual(lines);
    expect(withinRows(lines, 5)).toEqual(['a', 'b', 'c', '\u2026 2 more']);
    expect(withinRows(lines, 2)).toEqual(['\u2026 5 more']);
    // A terminal reporting one row or none still gets a line.
    expect(withinRows(lines, 0)).toEqual(['\u2026 5 more']);
  });
});

describe('columnMeasure', () => {
  it('estimates a line beyond Latin-1 until string-width has loaded, never below its real width', async () => {
    const width = columnMeasure();
    expect(width('plain ASCII and Lat\u00edn-1')).toBe(23);
    // e + U+0301 takes one column; before string-width is loaded it counts as three (two for
    // anything beyond Latin-1), so such a line is cut early rather than wrapped.
    expect(width('e\u0301')).toBe(3);
    expect(width('\u2714\ufe0f')).toBe(4);
    await width.loaded();
    expect(width('e\u0301')).toBe(1);
    expect(width('\u2714\ufe0f')).toBe(2);
    expect(width('\u6f22\u5b57')).toBe(4);
  });

  it('the estimate is at least the width', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        expect(columnsAtMost(text)).toBeGreaterThanOrEqual(stringWidth(text));
      }),
    );
  });
});

describe('openFrame', () => {
  let frame: Frame | null = null;
  afterEach(() => {
    frame?.close();
    frame = null;
  });

  it('draws in synchronized output, hides the cursor once, replaces the last frame and shows the cursor on close', () => {
    let written = '';
    const stream = { columns: 20, rows: 5, write: (text: string) => void (written += text) };
    frame = openFrame(stream);
    expect(written).toBe('');
    expect(frame.size()).toEqual({ columns: 20, rows: 5 });
    frame.draw(['one', 'two']);
    expect(written).toBe(`${ESC}[?2026h${ESC}[?25lone\ntwo\n${ESC}[?2026l`);
    written = '';
    frame.draw(['three']);
    expect(written).toBe(`${ESC}[?2026h${eraseFrame(2)}three\n${ESC}[?2026l`);
    written = '';
    frame.note('a message');
    expect(written).toBe(`${eraseFrame(1)}a message\n`);
    written = '';
    frame.close();
    expect(written).toBe(`${ESC}[?25h`);
    written = '';
    // Drawn again after a close: the cursor is hidden again.
    frame.draw(['four']);
    expect(written).toBe(`${ESC}[?2026h${ESC}[?25lfour\n${ESC}[?2026l`);
  });

  it('cuts a line as wide as the terminal on its plain text, and takes an unsized terminal as 80x24', () => {
    let written = '';
    frame = openFrame({ columns: 10, write: (text: string) => void (written += text) });
    expect(frame.size()).toEqual({ columns: 10, rows: 24 });
    frame.draw([`${ESC}[1mbold and long${ESC}[22m`, 'short'], ['bold and long', 'short']);
    expect(written).toContain('bold and \u2026\nshort\n');
    expect(openFrame({ write: () => undefined }).size()).toEqual({ columns: 80, rows: 24 });
  });

  it('listens for the signals that would leave the cursor hidden only while it is hidden', () => {
    const before = { exit: process.listenerCount('exit'), SIGINT: process.listenerCount('SIGINT'), SIGTSTP: process.listenerCount('SIGTSTP') };
    frame = openFrame({ write: () => undefined });
    frame.draw(['x']);
    expect(process.listenerCount('exit')).toBe(before.exit + 1);
    expect(process.listenerCount('SIGINT')).toBe(before.SIGINT + 1);
    expect(process.listenerCount('SIGTSTP')).toBe(before.SIGTSTP + 1);
    frame.close();
    expect({ exit: process.listenerCount('exit'), SIGINT: process.listenerCount('SIGINT'), SIGTSTP: process.listenerCount('SIGTSTP') }).toEqual(before);
  });
});
