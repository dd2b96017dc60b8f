import { liveViewWanted, printable } from '@prun/kit/cli';

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
 * Draws rows on a terminal stream, replacing the previous drawing (cursor up, clear below).
 * Lines are cut to the terminal's width so none wraps and breaks the redraw.
 */
export class LiveView {
  #shown = 0;

  constructor(
    private readonly stream: NodeJS.WritableStream & { columns?: number },
    private readonly colour: boolean,
  ) {}

  render(rows: readonly LiveRow[]): void {
    let text = this.#shown > 0 ? `\x1b[${this.#shown}F\x1b[J` : '';
    const width = this.stream.columns ?? 0;
    for (const row of rows) {
      const plain = liveLine(row);
      // Cut before painting, on the plain text: escape codes take no columns.
      const line = width > 0 && plain.length >= width ? `${plain.slice(0, width - 1)}` : liveLine(row, (s) => this.paint(s));
      text += `${line}\n`;
    }
    this.stream.write(text);
    this.#shown = rows.length;
  }

  /** Remove the drawing (before stdout's event lines, and at the end). */
  clear(): void {
    if (this.#shown > 0) this.stream.write(`\x1b[${this.#shown}F\x1b[J`);
    this.#shown = 0;
  }

  /** A message line on the same stream: above the drawing, which is drawn again on the next tick. */
  note(line: string): void {
    this.clear();
    this.stream.write(`${line}\n`);
  }

  private paint(status: string): string {
    if (!this.colour) return status;
    const code = status === 'done' ? 32 : status.startsWith('failed') ? 31 : status.startsWith('stalled') ? 33 : 0;
    return code === 0 ? status : `\x1b[${code}m${status}\x1b[0m`;
  }
}
