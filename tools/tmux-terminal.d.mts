// Types for tmux-terminal.mjs, so TypeScript tests can import it.

/** Whether tmux is installed; a test that needs it is skipped, visibly, when it is not. */
export const haveTmux: boolean;

/** A private tmux server (its socket in `root`) running one command in a pane of a known size. */
export class Terminal {
  constructor(root: string, name: string);
  /** Run `argv` (cwd `cwd`, environment exactly `env`) in a `columns`x`rows` pane (default 120x30) that stays on screen after it ends. */
  start(argv: string[], options: { env: NodeJS.ProcessEnv; cwd: string; columns?: number; rows?: number }): void;
  /** The screen and what scrolled off it, trailing blanks trimmed (tmux's own `Pane is dead` line left out). */
  screen(): string;
  /** Keys typed at the terminal (`C-c` for Ctrl-C). */
  keys(...keys: string[]): void;
  /** Whether the pane shows its cursor (tmux's cursor_flag). */
  cursorShown(): boolean;
  /** The pid of the process the pane runs (the sh that runs the command). */
  panePid(): number;
  /** The command's exit code once it has ended, else null. */
  exitCode(): number | null;
  /** Look at the screen until `check` holds (it is given every look) or the deadline passes. */
  waitForScreen(check: (screen: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  close(): void;
}
