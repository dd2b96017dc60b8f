import { liveViewOn } from '@prun/monitor';

/**
 * The panel is for a person at a terminal: stderr is a TTY, `TERM` is not `dumb`, `NO_COLOR` is
 * unset and no AI agent is the caller (the monitor's rule for its own live view). Its own module, so
 * a batch off a terminal decides this without loading the panel.
 */
export function panelWanted(env: NodeJS.ProcessEnv, stream: NodeJS.WriteStream = process.stderr): boolean {
  return liveViewOn(env, stream.isTTY === true);
}
