import { liveViewWanted, printable } from '@prun/kit/cli';
import type { Colours, Frame, FrameStream } from '@prun/kit/terminal';

/**
 * The live view: one line per unit on stderr, redrawn in place, for a person at a terminal.
 * Each line shows the unit's name, status, how long it has been watched and its tail (size and
 * growth per second). Coordinators read stdout, which this never touches.
 */

/**
 * Whether to draw it: stderr is a terminal, no AI agent is the caller, `TERM` is not `dumb`
 * (it cannot move the cursor) and `NO_COLOR` is unset or empty (a user who asks for plain
 * output gets no escape codes at all).
 */
export function liveViewOn(env: NodeJS.ProcessEnv, stderrIsTty: boolean): boolean {
  return liveViewWanted(env, stderrIsTty) && env.TERM !== 'dumb' && !env.NO_COLOR;
}

export interface LiveRow {
  name: string;
  status: string;
  /** Since the unit joined the watch. */
  elapsedMs: number;
  /** Null when there is no tail yet. */
  tailBytes: number | null;
  /** Bytes per second over the last few seconds; null until two samples exist. */
  growthPerS: number | null;
}

/** `9s`, `4m05s`, `2h03m`. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** `812 B`, `12.3 KiB`, `4.0 MiB`, `1.2 GiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** One line of the view (without colour): name, status, elapsed time, tail size and growth. */
export function liveLine(row: LiveRow, paint: (status: string) => string = (s) => s): string {
  const tail = row.tailBytes === null ? 'no tail' : `tail ${formatBytes(row.tailBytes)}`;
  const growth = row.growthPerS === null ? '' : ` +${formatBytes(row.growthPerS)}/s`;
  return `${printable(row.name)} ${paint(row.status)}  ${formatElapsed(row.elapsedMs)}  ${tail}${growth}`;
}

/** How far back the growth rate looks. */
export const GROWTH_WINDOW_MS = 5000;

/**
 * Tail growth of one unit from (time, size) samples: bytes per second over the last
 * GROWTH_WINDOW_MS. A tail that shrank (truncated by a restart) counts from its new size.
 */
export class GrowthMeter {
  #samples: Array<{ atMs: number; size: number }> = [];

  sample(atMs: number, size: number | null): number | null {
    if (size === null) {
      this.#samples = [];
      return null;
    }
    const last = this.#samples.at(-1);
    if (last !== undefined && size < last.size) this.#samples = [];
    this.#samples.push({ atMs, size });
    while (this.#samples.length > 2 && this.#samples[1]!.atMs <= atMs - GROWTH_WINDOW_MS) this.#samples.shift();
    const first = this.#samples[0]!;
    if (this.#samples.length < 2 || atMs <= first.atMs) return null;
    return ((size - first.size) * 1000) / (atMs - first.atMs);
  }
}

/**
 * Draws rows on a terminal stream, replacing the previous drawing: kit's frame (@prun/kit/terminal),
 * which erases the old lines one by one (never to the end of the screen, which in tmux pushes
 * every old frame into the scroll-back), hides the cursor while the view is up and cuts each line
 * to the terminal's columns so none wraps and breaks the redraw. That module (and the terminal
 * libraries behind it) loads only when a view is opened.
 */
export class LiveView {
  private constructor(
    private readonly frame: Frame,
    private readonly colours: Colours | null,
  ) {}

  static async open(stream: FrameStream, colour: boolean): Promise<LiveView> {
    const { colours, openFrame } = await import('@prun/kit/terminal');
    return new LiveView(openFrame(stream), colour ? colours : null);
  }

  render(rows: readonly LiveRow[]): void {
    const plain = rows.map((row) => liveLine(row));
    // A line cut to the terminal is cut on this plain text (escape codes take no columns).
    this.frame.draw(this.colours === null ? plain : rows.map((row) => liveLine(row, (s) => this.paint(s))), plain);
  }

  /** Remove the drawing (before stdout's event lines, and at the end) and show the cursor again. */
  clear(): void {
    this.frame.close();
  }

  /** A message line on the same stream: above the drawing, which is drawn again on the next tick. */
  note(line: string): void {
    this.frame.note(line);
  }

  private paint(status: string): string {
    const colours = this.colours!;
    if (status === 'done') return colours.green(status);
    if (status.startsWith('failed')) return colours.red(status);
    return status.startsWith('stalled') ? colours.yellow(status) : status;
  }
}
