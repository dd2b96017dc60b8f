// The panel on a terminal, redrawn on a timer: for `prun batch` (fed from the driver's memory)
// and `prun status --watch` (fed from the ledger file). Whether to show it at all is
// `panelWanted` (wanted.ts); off a terminal the callers print exactly their plain lines.
import type { Colours, Frame } from '@prun/kit/terminal';
import type { LedgerEntry } from '../ledger.js';
import { NO_PAINT, panelLines, type PanelState } from './panel.js';
import { PanelSampler, type SamplerOptions } from './sample.js';

/**
 * How often the panel is drawn again: elapsed times and countdowns move in whole seconds, and
 * each frame costs CPU the batch could use (the panel's budget is 1% of a batch's).
 */
export const REDRAW_MS = 1000;

export interface PanelFeed {
  ids: readonly string[];
  latest: ReadonlyMap<string, LedgerEntry>;
  /** The driver's stall verdicts, or null for a watcher (the sampler applies the rule itself). */
  stalled: ReadonlySet<string> | null;
}

export class LivePanel {
  private timer: NodeJS.Timeout | null = null;
  private lastFrame = '';
  private readonly onResize = (): void => this.draw();

  private constructor(
    private readonly frame: Frame,
    private readonly colours: Colours,
    private readonly sampler: PanelSampler,
    private readonly feed: () => PanelFeed,
    private readonly stream: NodeJS.WriteStream,
  ) {}

  static async open(options: SamplerOptions, feed: () => PanelFeed, stream: NodeJS.WriteStream = process.stderr): Promise<LivePanel> {
    // kit's frame: the redraw in place, the cursor hidden while the panel is up (and shown again
    // on close, Ctrl-Z, exit and a signal that ends the process), lines cut to the terminal. Its
    // module and the terminal libraries behind it load here, when the first panel opens.
    const { colours, openFrame } = await import('@prun/kit/terminal');
    const panel = new LivePanel(openFrame(stream), colours, new PanelSampler(options), feed, stream);
    panel.draw();
    // The timer never keeps the process alive: the batch (or the watch) decides when to end.
    panel.timer = setInterval(() => panel.draw(), REDRAW_MS).unref();
    stream.on('resize', panel.onResize);
    return panel;
  }

  /** The state drawn last (tests and the final frame). */
  state(): PanelState {
    const { ids, latest, stalled } = this.feed();
    return this.sampler.sample(ids, latest, stalled);
  }

  draw(): void {
    const state = this.state();
    const size = this.frame.size();
    const plain = panelLines(state, size, NO_PAINT);
    // Nothing a person would see changed: no repaint, no write.
    const key = `${size.columns}x${size.rows}\n${plain.join('\n')}`;
    if (key === this.lastFrame) return;
    this.lastFrame = key;
    this.frame.draw(panelLines(state, size, this.colours), plain);
  }

  /** A message (a stall, a failure) above the panel, then the panel again below it. */
  message(line: string): void {
    this.frame.note(line);
    // The note erased the panel: draw it again whatever the last frame was.
    this.lastFrame = '';
    this.draw();
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.stream.off('resize', this.onResize);
    this.frame.close();
  }
}
