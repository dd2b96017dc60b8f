#!/usr/bin/env node
// A loopback stand-in for an OpenAI-compatible chat-completions endpoint, so tests can
// drive the real `pi` without a network or a model. Replies are scripted by markers in
// the last user message; see README.md. Plain Node (20 and 22), no dependencies.
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

export const MODEL_ID = 'fake-model';

const SLOW_CHUNKS = 40;
const SLOW_INTERVAL_MS = 100;

/** Text of an OpenAI message's content, which is a string or an array of parts. */
export function messageText(message) {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((part) => part && typeof part.text === 'string')
      .map((part) => part.text)
      .join('');
  }
  return '';
}

function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') return messageText(messages[i]);
  }
  return '';
}

/**
 * Decides the reply to one chat-completions request body. Pure except for `seen`,
 * the per-server set of prompts whose "once" behaviour has already fired.
 */
export function planReply(body, seen) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const userText = lastUserText(messages);
  const last = messages[messages.length - 1];
  const sleep = /\[\[sleep:(\d+)\]\]/.exec(userText);
  const delayMs = sleep ? Number(sleep[1]) : 0;

  if (last?.role === 'tool') {
    return { kind: 'text', text: `TOOL-RESULT: ${messageText(last).trim()}`, delayMs, userText };
  }
  if (userText.includes('[[400]]')) return { kind: 'status', status: 400, delayMs, userText };
  if (userText.includes('[[500-once]]')) {
    const key = `500-once\0${userText}`;
    if (!seen.has(key)) {
      seen.add(key);
      return { kind: 'status', status: 500, delayMs, userText };
    }
  }
  if (userText.includes('[[hang]]')) return { kind: 'hang', delayMs, userText };
  if (userText.includes('[[slow]]')) {
    const words = Array.from({ length: SLOW_CHUNKS }, (_, i) => (i === 0 ? 'SLOW-REPLY' : ` w${i}`));
    return { kind: 'text', chunks: words, intervalMs: SLOW_INTERVAL_MS, delayMs, userText };
  }
  const bash = /\[\[bash:([\s\S]*?)\]\]/.exec(userText);
  if (bash) return { kind: 'tool', name: 'bash', args: { command: bash[1] }, delayMs, userText };
  return { kind: 'text', text: `ECHO: ${userText}`, delayMs, userText };
}

const ERROR_BODIES = {
  400: { message: 'fake-llm: bad request ([[400]] marker)', type: 'invalid_request_error', code: 'invalid_request' },
  500: { message: 'fake-llm: internal error ([[500-once]] marker)', type: 'server_error', code: 'internal_error' },
};

function tokenCount(text) {
  return Math.max(1, Math.ceil(text.length / 4));
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Starts the server on 127.0.0.1. Resolves to { port, url, close(), requests }, where
 * `requests` collects one record per request, in arrival order.
 */
export function startFakeLlm(opts = {}) {
  const requests = [];
  const seen = new Set();
  const openStreams = new Set();
  // [[gate:NAME]]: the reply waits after its role chunk until the test opens the gate, so a
  // run is certainly still going while the test looks at it, however loaded the machine.
  const gates = new Map();
  const gate = (name) => {
    if (!gates.has(name)) {
      let open;
      gates.set(name, { promise: new Promise((resolve) => (open = resolve)), open });
    }
    return gates.get(name);
  };
  let completionCount = 0;

  const pause = (ms, res) =>
    new Promise((resolve) => {
      if (ms <= 0) return resolve();
      const onClose = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        res.off('close', onClose);
        resolve();
      }, ms);
      res.once('close', onClose);
    });

  async function completions(req, res, raw) {
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      requests.push({ method: req.method, path: req.url, body: raw, lastUserText: '', reply: 'bad-json' });
      return sendJson(res, 400, { error: { message: 'fake-llm: body is not JSON', type: 'invalid_request_error' } });
    }
    const plan = planReply(body, seen);
    requests.push({ method: req.method, path: req.url, body, lastUserText: plan.userText, reply: plan.kind });
    await pause(plan.delayMs, res);
    if (res.destroyed) return;

    if (plan.kind === 'status') {
      return sendJson(res, plan.status, { error: ERROR_BODIES[plan.status] });
    }

    const id = `chatcmpl-fake-${++completionCount}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' ? body.model : MODEL_ID;
    const chunk = (choices, extra = {}) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
    const delta = (d, finishReason = null) => chunk([{ index: 0, delta: d, finish_reason: finishReason }]);

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    openStreams.add(res);
    res.once('close', () => openStreams.delete(res));
    res.write(delta({ role: 'assistant', content: '' }));
    const gateName = /\[\[gate:([A-Za-z0-9_-]+)\]\]/.exec(plan.userText)?.[1];
    if (gateName !== undefined) {
      await Promise.race([gate(gateName).promise, new Promise((resolve) => res.once('close', resolve))]);
      if (res.destroyed) return;
    }

    if (plan.kind === 'hang') {
      res.write(delta({ content: 'HANGING' }));
      return; // Never ends: the client disconnects, or close() destroys it.
    }

    let produced = '';
    let finishReason = 'stop';
    if (plan.kind === 'tool') {
      const args = JSON.stringify(plan.args);
      produced = args;
      finishReason = 'tool_calls';
      res.write(
        delta({
          tool_calls: [
            { index: 0, id: `call_fake_${completionCount}`, type: 'function', function: { name: plan.name, arguments: args } },
          ],
        }),
      );
    } else {
      const pieces = plan.chunks ?? [plan.text];
      for (let i = 0; i < pieces.length; i++) {
        if (i > 0) await pause(plan.intervalMs ?? 0, res);
        if (res.destroyed) return;
        res.write(delta({ content: pieces[i] }));
        produced += pieces[i];
      }
    }
    const promptTokens = tokenCount(JSON.stringify(body.messages ?? []));
    const completionTokens = tokenCount(produced);
    res.write(delta({}, finishReason));
    res.write(
      chunk([], {
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      }),
    );
    res.end('data: [DONE]\n\n');
  }

  const server = createServer(async (req, res) => {
    try {
      const raw = await readBody(req);
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'POST' && path.endsWith('/chat/completions')) return await completions(req, res, raw);
      requests.push({ method: req.method, path: req.url, body: raw, lastUserText: '', reply: 'other' });
      // POST /gates/NAME/open: openGate(NAME) for whoever is not in this process (a reader in a shell).
      const opening = /^\/gates\/([A-Za-z0-9_-]+)\/open$/.exec(path);
      if (req.method === 'POST' && opening) {
        gate(opening[1]).open();
        return sendJson(res, 200, { gate: opening[1], open: true });
      }
      if (req.method === 'GET' && path.endsWith('/models')) {
        return sendJson(res, 200, { object: 'list', data: [{ id: MODEL_ID, object: 'model', created: 0, owned_by: 'fake' }] });
      }
      sendJson(res, 404, { error: { message: `fake-llm: no route ${req.method} ${path}`, type: 'not_found' } });
    } catch (error) {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `fake-llm: ${error?.message ?? error}` } });
      else res.destroy();
    }
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        port,
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        openGate: (name) => gate(name).open(),
        close: () =>
          new Promise((done) => {
            for (const res of openStreams) res.destroy();
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

function parsePort(argv) {
  const at = argv.indexOf('--port');
  if (at === -1) return 0;
  const value = argv[at + 1];
  if (!value || !/^\d+$/.test(value) || Number(value) > 65535) {
    throw new Error(`--port needs a number 0-65535, got ${value ?? 'nothing'}`);
  }
  return Number(value);
}

async function main(argv) {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      'usage: node tools/fake-llm/server.mjs [--port N] [--agent-dir DIR]\n' +
        'prints "LISTENING <port>", serves 127.0.0.1 until SIGINT/SIGTERM; with --agent-dir, writes\n' +
        "pi's models.json and settings.json there so pi (PI_CODING_AGENT_DIR=DIR) uses this server\n",
    );
    return;
  }
  const fake = await startFakeLlm({ port: parsePort(argv) });
  const agentAt = argv.indexOf('--agent-dir');
  if (agentAt !== -1) {
    const dir = argv[agentAt + 1];
    if (!dir) throw new Error('--agent-dir needs a directory');
    const { writeAgentConfig } = await import('./harness.mjs');
    writeAgentConfig(dir, fake.port);
  }
  process.stdout.write(`LISTENING ${fake.port}\n`);
  const stop = () => fake.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error) => {
    process.stderr.write(`fake-llm: ${error?.message ?? error}\n`);
    process.exitCode = 1;
  });
}
