import { setFlagsFromString } from 'node:v8';

/**
 * Keep V8 to its interpreter for the rest of the process. A snapshot's JavaScript only hands
 * 1 MiB buffers between native steps (read, SHA-256, CRC-32, write), so V8's optimizing tiers win
 * nothing here, while compiling hot functions touches megabytes of compiler code and zones: peak
 * RSS. That happens as early as module loading (Node's own loader functions turn hot; measured:
 * 4 MiB more peak RSS for `--help` from a checkout one directory deeper), so the bin calls this
 * before it imports anything else. Process-wide, so only for this command's own process (the bin,
 * or `prun snapshot-tail`), never in the library.
 */
export function keepToTheInterpreter(): void {
  setFlagsFromString('--no-turbofan');
  setFlagsFromString('--no-maglev');
  setFlagsFromString('--no-sparkplug');
}
