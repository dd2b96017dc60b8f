// Drawing the panel on a terminal. The terminal libraries (log-update for the redraw in place,
// string-width for the width of a line, picocolors for colour; see the package README) are
// imported here on first use only, so no other command pays for loading them.
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

export async function openTerminal(stream: NodeJS.WriteStream): Promise<PanelTerminal> {
  const [{ createLogUpdate }, { default: stringWidth }, { createColors }] = await Promise.all([
    import('log-update'),
    import('string-width'),
    import('picocolors'),
  ]);
  const size = (): PanelSize => ({
    columns: stream.columns > 0 ? stream.columns : DEFAULT_SIZE.columns,
    rows: stream.rows > 0 ? stream.rows : DEFAULT_SIZE.rows,
  });
  // log-update reads the size from the stream it writes to: give it the same fallback.
  const sized = {
    isTTY: true,
    write: (text: string) => stream.write(text),
    get columns() {
      return size().columns;
    },
    get rows() {
      return size().rows;
    },
  } as unknown as NodeJS.WriteStream;
  const update = createLogUpdate(sized);
  const colours = createColors(true);
  const paint: Paint = {
    green: colours.green,
    red: colours.red,
    yellow: colours.yellow,
    cyan: colours.cyan,
    dim: colours.dim,
    bold: colours.bold,
  };

  /** `text` cut to `width` columns (wide characters count double), with an ellipsis when cut. */
  const cut = (text: string, width: number): string => {
    let used = 0;
    let out = '';
    for (const char of text) {
      const w = stringWidth(char);
      if (used + w > width - 1) return `${out}…`;
      used += w;
      out += char;
    }
    return out;
  };

  return {
    paint,
    size,
    draw(painted, plain) {
      // A line wider than the terminal would wrap and break the redraw: cut it (its plain
      // text; escape codes take no columns but cannot be cut through).
      const width = size().columns;
      const lines = painted.map((line, i) => {
        const text = plain[i] ?? line;
        // Printable ASCII takes one column a character: no need to ask string-width.
        const columns = /^[\x20-\x7e]*$/.test(text) ? text.length : stringWidth(text);
        return columns >= width ? cut(text, width) : line;
      });
      update(lines.join('\n'));
    },
    note(line) {
      update.clear();
      stream.write(`${line}\n`);
    },
    close() {
      update.clear();
      update.done();
    },
  };
}
