import type { Timings } from '../timing.js';

/** What a command gets from the bin: its environment, waits and output channels. */
export interface Context {
  env: NodeJS.ProcessEnv;
  timings: Timings;
  /** resultBlock: a reader gone by then does not change the exit code (see printResult). */
  out: (text: string, options?: { resultBlock?: boolean }) => void;
  note: (message: string) => void;
  readStdin: () => string;
}

export type Command = (argv: string[], ctx: Context) => Promise<number>;
