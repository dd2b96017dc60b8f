// The control socket protocol, shared byte for byte with multi_agent.py: one JSON request line
// (`steer`, `abort`, `kill`), one JSON reply line (`{"ok": ..., "disposition"|"error": ...}`).

export type ControlRequest = { type: 'steer'; message: string } | { type: 'abort' } | { type: 'kill' };
export type ControlReply = { ok: true; disposition: string } | { ok: false; error: string };
export type ControlAnswer = Record<string, unknown>;

/** Python's json.dumps of a flat object: `{"k": v, ...}` with ASCII escapes. */
export function pyDumps(value: unknown): string {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${pyDumps(k)}: ${pyDumps(v)}`).join(', ')}}`;
  }
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(', ')}]`;
  const json = JSON.stringify(value) ?? 'null';
  return json.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The first line of what a peer sent, parsed; undefined when it is not JSON. */
export function parseLine(data: string): unknown {
  try {
    return JSON.parse(data.split('\n')[0] ?? '') as unknown;
  } catch {
    return undefined;
  }
}
