// The control socket protocol, shared byte for byte with multi_agent.py: one JSON request line
// (`steer`, `abort`, `kill`), one JSON reply line (`{"ok": ..., "disposition"|"error": ...}`).

import { pyJsonDumps } from '@prun/kit/py';

export type ControlRequest = { type: 'steer'; message: string } | { type: 'abort' } | { type: 'kill' };
export type ControlReply = { ok: true; disposition: string } | { ok: false; error: string };
export type ControlAnswer = Record<string, unknown>;

/** A control line as multi_agent.py's json.dumps writes it: `{"k": v, ...}`, ASCII only. */
export function pyDumps(value: unknown): string {
  return pyJsonDumps(value);
}

/** The first line of what a peer sent, parsed; undefined when it is not JSON. */
export function parseLine(data: string): unknown {
  try {
    return JSON.parse(data.split('\n')[0] ?? '') as unknown;
  } catch {
    return undefined;
  }
}
