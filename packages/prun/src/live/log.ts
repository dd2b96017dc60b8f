// A unit's worker output for a person: the stream-json events of its `tail` as lines of text.
// The events are read the way the dispatcher reads them (Python's json.loads, kit's pyJsonLoads,
// and for `init` and `result` events the dispatcher's own fold, @prun/dispatcher-agy's
// readEventStream); the other kinds are drawn here.
import { readEventStream } from '@prun/dispatcher-agy';
import { printable } from '@prun/kit/cli';
import { pyJsonLoads } from '@prun/kit/py';

/** How much of a tool call's arguments or a tool's output one line shows. */
export const DETAIL_CHARS = 160;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function oneLine(text: string, max = DETAIL_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return printable(flat.length > max ? `${flat.slice(0, max - 1)}…` : flat);
}

/** Text lines of a message body: a string, or a list of parts with `text` (as Gemini-style streams send). */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts = content.map((part) => (typeof part === 'string' ? part : isRecord(part) && typeof part['text'] === 'string' ? part['text'] : '')).filter(Boolean);
    return parts.length === 0 ? null : parts.join('');
  }
  if (isRecord(content) && typeof content['text'] === 'string') return content['text'];
  return null;
}

/** Each line of a multi-line text, control characters made visible. */
const textLines = (text: string, lead = ''): string[] => text.replace(/\s+$/, '').split(/\r\n|\r|\n/).map((line) => `${lead}${printable(line)}`);

function argsText(args: unknown): string {
  if (args === undefined || args === null) return '';
  if (typeof args === 'string') return oneLine(args);
  return oneLine(JSON.stringify(args));
}

/** The name and arguments of a tool call, wherever a stream puts them. */
function toolCall(event: Record<string, unknown>): { name: string; args: unknown } | null {
  const info = isRecord(event['tool_info']) ? event['tool_info'] : isRecord(event['tool']) ? event['tool'] : event;
  const name = [info['tool_name'], info['name'], event['tool_name'], event['name']].find((value) => typeof value === 'string' && value !== '');
  if (typeof name !== 'string') return null;
  return { name, args: info['parameters'] ?? info['args'] ?? info['arguments'] ?? info['input'] ?? event['parameters'] ?? event['args'] };
}

/**
 * One line of the tail as zero or more lines for a person:
 * - `init`: `-- session: model M, conversation C`
 * - an assistant `message`: its text, line for line
 * - a tool call (`tool_use`, `tool_call`, or a step naming a tool): `> tool NAME ARGS`
 * - a tool's answer (`tool_result`): `< NAME ok|error: OUTPUT`
 * - `result`: `-- result STATUS[: ERROR]` and the final response, indented
 * - `error`: `! MESSAGE`
 * - any other event: nothing; a line that is not JSON: the line itself (worker noise).
 */
export function renderEventLine(line: string): string[] {
  if (line.trim() === '') return [];
  let event: unknown;
  try {
    event = pyJsonLoads(line);
  } catch {
    return [printable(line)];
  }
  if (!isRecord(event)) return [printable(line)];
  const kind = typeof event['event'] === 'string' ? event['event'] : typeof event['type'] === 'string' ? event['type'] : null;
  switch (kind) {
    case 'init': {
      const { conversationId } = readEventStream(line);
      const model = typeof event['model'] === 'string' ? `model ${printable(event['model'])}` : null;
      const details = [model, conversationId === null ? null : `conversation ${printable(conversationId)}`].filter(Boolean);
      return [`-- session${details.length > 0 ? `: ${details.join(', ')}` : ''}`];
    }
    case 'result': {
      const reading = readEventStream(line);
      const head = `-- result ${printable(reading.status ?? 'SUCCESS')}${reading.error === null ? '' : `: ${oneLine(reading.error)}`}`;
      return [head, ...(reading.response === null ? [] : textLines(reading.response, '   '))];
    }
    case 'message':
    case 'assistant': {
      const role = typeof event['role'] === 'string' ? event['role'] : 'assistant';
      if (role !== 'assistant') return [];
      const text = textOf(event['content'] ?? event['text'] ?? event['message']);
      return text === null || text.trim() === '' ? [] : textLines(text);
    }
    case 'tool_use':
    case 'tool_call': {
      const call = toolCall(event);
      return call === null ? [] : [`> tool ${printable(call.name)}${argsText(call.args) === '' ? '' : ` ${argsText(call.args)}`}`];
    }
    case 'tool_result': {
      const name = [event['tool_name'], event['name'], event['tool_id']].find((value) => typeof value === 'string') as string | undefined;
      const failed = event['status'] === 'error' || event['is_error'] === true || event['error'] !== undefined;
      const output = textOf(event['output'] ?? event['content'] ?? event['error']);
      return [`< ${name === undefined ? 'tool' : printable(name)} ${failed ? 'error' : 'ok'}${output === null || output.trim() === '' ? '' : `: ${oneLine(output)}`}`];
    }
    case 'step_update': {
      // Newer agy streams report progress as steps, the step in the event's `step_update` object
      // (tools/fake-agy/README.md "Protocol"): a tool step names its tool (in `tool_info`), a
      // text step carries `text_delta`. A finished tool step is its answer, not a second call.
      const step = isRecord(event['step_update']) ? event['step_update'] : event;
      const call = toolCall(step);
      if (call !== null && step['state'] === 'DONE') return [`< ${printable(call.name)} ok`];
      if (call !== null && step['state'] === 'ERROR') return [`< ${printable(call.name)} error`];
      if (call !== null) return [`> tool ${printable(call.name)}${argsText(call.args) === '' ? '' : ` ${argsText(call.args)}`}`];
      const text = textOf(step['text_delta'] ?? step['content'] ?? step['text']);
      return text === null || text.trim() === '' ? [] : textLines(text);
    }
    case 'error': {
      const message = textOf(event['message'] ?? event['error']);
      return [`! ${message === null ? 'error' : oneLine(message, 400)}`];
    }
    default:
      return [];
  }
}

/**
 * Renders a growing tail chunk by chunk: complete lines are drawn as they come, a partial last
 * line waits for the rest (or for `flush` once the unit has settled).
 */
export class TailRenderer {
  private pending = '';
  private readonly decoder = new TextDecoder('utf-8');

  push(bytes: Uint8Array): string[] {
    this.pending += this.decoder.decode(bytes, { stream: true });
    const lines = this.pending.split(/\r\n|\n|\r(?!$)/);
    this.pending = lines.pop() ?? '';
    return lines.flatMap(renderEventLine);
  }

  flush(): string[] {
    const rest = this.pending + this.decoder.decode();
    this.pending = '';
    return rest === '' ? [] : renderEventLine(rest);
  }
}
