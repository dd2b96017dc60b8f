// What the runner learns from pi's `--mode rpc` records. Pure: it returns what to log and what
// to send, and the runner does the I/O.
import type { SkippedLine } from './lines.js';
import { excerpt } from './text.js';
// Python's str() of a JSON value, so progress lines read the same from both programs.
import { pyJsonDumps, pyStr } from '@prun/kit/py';

export const DIALOG_METHODS = ['select', 'confirm', 'input', 'editor'];

export type RpcRecord = Record<string, unknown>;
export type ControlReply = { ok: true; disposition: string } | { ok: false; error: string };

export interface RpcEffects {
  progress: string[];
  send: RpcRecord[];
  /** pi answered a forwarded control request (a steer): reply to whoever is waiting on that id. */
  ack?: { id: string; reply: ControlReply };
}

export type Usage = Record<string, number>;

function isRecord(value: unknown): value is RpcRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function shortArgs(args: unknown): string {
  if (isRecord(args)) {
    for (const key of ['command', 'path', 'file_path', 'pattern', 'query', 'url']) {
      const value = args[key];
      if (typeof value === 'string' && value) return excerpt(value);
    }
  }
  return excerpt(pyJsonDumps(args, { ensureAscii: false, separators: [',', ':'] }));
}

const USAGE_KEYS = ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens'];

export class RunTracker {
  promptResponse: RpcRecord | undefined;
  settled = false;
  lastStop: string | undefined;
  lastError: string | undefined;
  /** This run's latest assistant text; an earlier run's (or the forked caller's) text never counts. */
  lastText: string | null = null;
  modelUsed: string | undefined;
  usage: Usage;

  constructor(usage: Usage = {}) {
    this.usage = { ...usage };
  }

  /** Parse one stdout line (LF-terminated; U+2028 inside JSON strings is fine). */
  handleLine(line: string): RpcEffects {
    const trimmed = line.replace(/\r$/, '');
    if (!trimmed.trim()) return { progress: [], send: [] };
    let record: unknown;
    try {
      record = JSON.parse(trimmed);
    } catch {
      return { progress: [], send: [] };
    }
    return isRecord(record) ? this.handle(record) : { progress: [], send: [] };
  }

  /**
   * A record too long to read (see MAX_RECORD_BYTES): logged with its type and size. When it was
   * the agent's final message, the output says where the reply is instead of showing an older one.
   */
  handleSkipped(skipped: SkippedLine, limitBytes: number): RpcEffects {
    const kind = /"type"\s*:\s*"([A-Za-z0-9_]{1,64})"/.exec(skipped.head)?.[1] ?? 'unknown';
    if (kind === 'message_end' && /"role"\s*:\s*"assistant"/.test(skipped.head)) {
      this.lastText = `(the agent's last message was ${mib(skipped.bytes)}, more than prun-job reads; it is in the job's pi session file)`;
    }
    return { progress: [`skipped an over-long pi record: ${kind}, ${mib(skipped.bytes)} (limit ${mib(limitBytes)})`], send: [] };
  }

  handle(record: RpcRecord): RpcEffects {
    const effects: RpcEffects = { progress: [], send: [] };
    const kind = record['type'];
    if (kind === 'response') {
      const id = record['id'];
      if (id === 'prompt') {
        this.promptResponse = record;
      } else if (typeof id === 'string') {
        if (record['success']) {
          const data = isRecord(record['data']) ? record['data'] : {};
          const disposition = typeof data['disposition'] === 'string' && data['disposition'] ? data['disposition'] : 'queued';
          effects.ack = { id, reply: { ok: true, disposition } };
        } else {
          const error = typeof record['error'] === 'string' && record['error'] ? record['error'] : 'steer failed';
          effects.ack = { id, reply: { ok: false, error } };
        }
      }
    } else if (kind === 'tool_execution_start') {
      effects.progress.push(`${typeof record['toolName'] === 'string' ? record['toolName'] : '?'} ${shortArgs(record['args'])}`);
    } else if (kind === 'message_end') {
      const message = isRecord(record['message']) ? record['message'] : {};
      if (message['role'] === 'assistant') this.onAssistantMessage(message);
    } else if (kind === 'auto_retry_start') {
      effects.progress.push(
        `retry ${pyStr(record['attempt'])}/${pyStr(record['maxAttempts'])}: ${excerpt(typeof record['errorMessage'] === 'string' ? record['errorMessage'] : '')}`,
      );
    } else if (kind === 'compaction_start') {
      effects.progress.push(`compaction (${record['reason'] === undefined ? '?' : pyStr(record['reason'])})`);
    } else if (kind === 'extension_ui_request' && DIALOG_METHODS.includes(String(record['method']))) {
      // No person can answer; without a reply the extension would wait, often forever.
      effects.send.push({ type: 'extension_ui_response', id: record['id'] ?? null, cancelled: true });
      const title = typeof record['title'] === 'string' && record['title'] ? record['title'] : record['method'];
      effects.progress.push(`denied: ${excerpt(title)}`);
    } else if (kind === 'agent_settled') {
      this.settled = true;
    }
    return effects;
  }

  private onAssistantMessage(message: RpcRecord): void {
    this.lastStop = typeof message['stopReason'] === 'string' ? message['stopReason'] : undefined;
    this.lastError = typeof message['errorMessage'] === 'string' ? message['errorMessage'] : undefined;
    const content = message['content'];
    const hasContent = Array.isArray(content) ? content.length > 0 : Boolean(content);
    // As pi's get_last_assistant_text does, an aborted message without content keeps the text before it.
    if (hasContent || this.lastStop !== 'aborted') {
      const parts: unknown[] = Array.isArray(content) ? content : [{ type: 'text', text: content ? String(content) : '' }];
      const text = parts
        .map((p) => (isRecord(p) && p['type'] === 'text' && typeof p['text'] === 'string' ? p['text'] : ''))
        .join('');
      this.lastText = text.trim() || null;
    }
    const provider = message['provider'];
    const model = message['model'];
    if (typeof provider === 'string' && provider && typeof model === 'string' && model) this.modelUsed = `${provider}/${model}`;
    else if (typeof model === 'string' && model) this.modelUsed = model;
    const usage = isRecord(message['usage']) ? message['usage'] : {};
    for (const key of USAGE_KEYS) {
      const value = usage[key];
      if (typeof value === 'number') this.usage[key] = (this.usage[key] ?? 0) + value;
    }
    const cost = isRecord(usage['cost']) ? usage['cost']['total'] : undefined;
    if (typeof cost === 'number') this.usage['cost'] = Math.round(((this.usage['cost'] ?? 0) + cost) * 1e6) / 1e6;
  }
}

/** How a run that pi settled ended. */
export function settledStatus(s: { timingOut: boolean; abortRequested: boolean; lastStop: string | undefined }): string {
  if (s.timingOut) return 'timeout';
  if (s.abortRequested || s.lastStop === 'aborted') return 'aborted';
  if (s.lastStop === 'error') return 'failed';
  return 'done';
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB`;
}
