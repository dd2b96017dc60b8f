#!/usr/bin/env node
// End-to-end check of the real pi (tools/pi/pi) against the fake model server, over
// `pi --mode rpc` with the flags multi_agent.py passes. Exits 0 when every case holds.
//   node tools/fake-llm/smoke.mjs [--verbose] [CASE...]
// --verbose prints each case's event sequence (the source of README.md's protocol notes).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL, PI_BIN, listProcesses, makePiEnv, startFakeLlm, waitForNoProcesses } from './harness.mjs';

const argv = process.argv.slice(2);
const verbose = argv.includes('--verbose');
const only = argv.filter((a) => !a.startsWith('--'));
const STEP_TIMEOUT_MS = 30_000;

class Pi {
  constructor({ env, cwd, sessionDir, sessionId, appendPromptFile }) {
    this.events = [];
    this.waiters = [];
    this.stderr = '';
    this.exited = null;
    this.ids = 0;
    const args = ['--mode', 'rpc', '--session-dir', sessionDir, '--session-id', sessionId];
    args.push('--model', MODEL, '--append-system-prompt', appendPromptFile);
    this.child = spawn(PI_BIN, args, { cwd, env: { ...env, PI_MINIMAL_PERMISSION_SYSTEM_NONINTERACTIVE: '1' } });
    let buffer = '';
    this.child.stdout.on('data', (data) => {
      buffer += data;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          this.events.push({ at: Date.now(), record: JSON.parse(line) });
        } catch {
          this.events.push({ at: Date.now(), record: { type: '(non-json line)', line } });
        }
        this.wake();
      }
    });
    this.child.stderr.on('data', (data) => (this.stderr += data));
    this.child.stdin.on('error', () => {}); // pi may be gone when we write
    this.exitPromise = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exited = { code, signal, at: Date.now() };
        this.wake();
        resolve(this.exited);
      });
    });
  }

  wake() {
    for (const check of [...this.waiters]) check();
  }

  send(command) {
    const record = { id: command.id ?? `c${++this.ids}`, ...command };
    this.child.stdin.write(`${JSON.stringify(record)}\n`);
    return record.id;
  }

  /** Resolves with the first event at index >= from that satisfies pred. */
  waitFor(pred, what, from = 0, timeoutMs = STEP_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const check = () => {
        const found = this.events.slice(from).find((e) => pred(e.record));
        if (found || this.exited) {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== check);
          if (found) resolve(found.record);
          else reject(new Error(`pi exited (${JSON.stringify(this.exited)}) while waiting for ${what}; stderr: ${this.stderr.trim()}`));
        }
      };
      this.waiters.push(check);
      check();
    });
  }

  response(id, from = 0) {
    return this.waitFor((r) => r.type === 'response' && r.id === id, `response to ${id}`, from);
  }

  settled(from) {
    return this.waitFor((r) => r.type === 'agent_settled', 'agent_settled', from);
  }

  async stop() {
    if (!this.exited) this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exitPromise;
    clearTimeout(timer);
  }
}

function textOf(message) {
  const content = message?.content;
  if (typeof content === 'string') return content;
  return (content ?? []).filter((p) => p?.type === 'text').map((p) => p.text).join('');
}

/** One line per event with the fields a client acts on; message_update runs collapse. */
function describe(events) {
  const out = [];
  for (const { record: r } of events) {
    let line = r.type;
    if (r.type === 'response') line = `response ${r.command}${r.success ? '' : ' FAILED'}${r.data?.disposition ? ` disposition=${r.data.disposition}` : ''}`;
    else if (r.type === 'message_start' || r.type === 'message_end') {
      const m = r.message ?? {};
      line = `${r.type} role=${m.role}`;
      if (r.type === 'message_end' && m.role === 'assistant') {
        line += ` stopReason=${m.stopReason}`;
        if (m.errorMessage) line += ` errorMessage=${JSON.stringify(m.errorMessage.slice(0, 60))}`;
        const tool = (m.content ?? []).find((p) => p.type === 'toolCall');
        if (tool) line += ` toolCall=${tool.name}(${JSON.stringify(tool.arguments)})`;
      }
      if (r.type === 'message_end' && m.role !== 'system') {
        const text = textOf(m);
        if (text) line += ` text=${JSON.stringify(text.length > 50 ? `${text.slice(0, 50)}...` : text)}`;
      }
    } else if (r.type === 'tool_execution_start') line += ` ${r.toolName} ${JSON.stringify(r.args)}`;
    else if (r.type === 'tool_execution_end') line += ` isError=${r.isError}`;
    else if (r.type === 'auto_retry_start') line += ` attempt=${r.attempt}/${r.maxAttempts} delayMs=${r.delayMs}`;
    else if (r.type === 'auto_retry_end') line += ` success=${r.success}`;
    else if (r.type === 'agent_settled') line += ` aborted=${r.aborted}`;
    else if (r.type === 'queue_update') line += ` steering=${JSON.stringify(r.steering)}`;
    if (line === out[out.length - 1]?.line) out[out.length - 1].count++;
    else out.push({ line, count: 1 });
  }
  return out.map(({ line, count }) => (count > 1 ? `${line} x${count}` : line));
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function lastAssistant(pi, from) {
  const ends = pi.events.slice(from).filter((e) => e.record.type === 'message_end' && e.record.message?.role === 'assistant');
  return ends[ends.length - 1]?.record.message;
}

async function waitUntil(cond, what, timeoutMs = STEP_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sends a prompt and waits for agent_settled; returns the events of this run. */
async function run(pi, message) {
  const from = pi.events.length;
  const id = pi.send({ type: 'prompt', message });
  const response = await pi.response(id, from);
  check(response.success && response.data?.disposition === 'started', `prompt not started: ${JSON.stringify(response)}`);
  await pi.settled(from);
  return from;
}

const fake = await startFakeLlm();
const root = mkdtempSync(join(tmpdir(), 'prun-pi-smoke-'));
const piEnv = makePiEnv({ port: fake.port, root });
const sessionDir = join(root, 'sessions');
const appendPromptFile = join(root, 'append-prompt.md');
writeFileSync(appendPromptFile, 'SMOKE-APPEND-MARKER: you are a smoke test job.\n');
const spawnPi = (sessionId = 'smoke') => new Pi({ env: piEnv.env, cwd: piEnv.cwd, sessionDir, sessionId, appendPromptFile });

let shared; // one pi for the sequential cases, as one job's runner would hold it
const sharedPi = async () => {
  if (!shared) {
    shared = spawnPi();
    const started = Date.now();
    const state = await shared.response(shared.send({ id: 'ready', type: 'get_state' }));
    check(state.success && state.data?.model?.id === 'fake-model', `get_state: ${JSON.stringify(state).slice(0, 300)}`);
    if (verbose) console.log(`# pi ready (get_state answered) after ${Date.now() - started} ms; model ${state.data.model.provider}/${state.data.model.id}`);
    // The leftover check at the end is only worth something if it can see a live pi.
    check(listProcesses(root).some((p) => p.pid === shared.child.pid), 'listProcesses(root) does not see the running pi');
  }
  return shared;
};

const cases = {
  async echo() {
    const pi = await sharedPi();
    const from = await run(pi, 'hello smoke');
    const reply = lastAssistant(pi, from);
    check(textOf(reply) === 'ECHO: hello smoke' && reply.stopReason === 'stop', `echo reply: ${JSON.stringify(reply)}`);
    const request = fake.requests.at(-1);
    const system = request.body.messages.find((m) => m.role === 'system' || m.role === 'developer');
    check(textOf(system).includes('SMOKE-APPEND-MARKER'), '--append-system-prompt text did not reach the model');
    return from;
  },
  async bash() {
    const pi = await sharedPi();
    const from = await run(pi, 'run it [[bash:echo hi]]');
    const reply = lastAssistant(pi, from);
    check(textOf(reply) === 'TOOL-RESULT: hi', `bash reply: ${textOf(reply)}`);
    check(pi.events.slice(from).some((e) => e.record.type === 'tool_execution_start' && e.record.toolName === 'bash'), 'no tool_execution_start');
    return from;
  },
  async retry500() {
    const pi = await sharedPi();
    const from = await run(pi, 'flaky [[500-once]]');
    check(pi.events.slice(from).some((e) => e.record.type === 'auto_retry_start'), 'no auto_retry_start');
    check(textOf(lastAssistant(pi, from)) === 'ECHO: flaky [[500-once]]', 'retry did not end in the echo');
    return from;
  },
  async error400() {
    const pi = await sharedPi();
    const from = await run(pi, 'broken [[400]]');
    const reply = lastAssistant(pi, from);
    check(reply.stopReason === 'error' && /^400/.test(reply.errorMessage ?? ''), `400 reply: ${JSON.stringify(reply)}`);
    const settled = pi.events.slice(from).find((e) => e.record.type === 'agent_settled').record;
    check(settled.aborted === false, 'an error run settled as aborted');
    return from;
  },
  async sleep() {
    const pi = await sharedPi();
    const started = Date.now();
    const from = await run(pi, 'patience [[sleep:800]]');
    check(Date.now() - started >= 800, 'the [[sleep:800]] reply came early');
    check(textOf(lastAssistant(pi, from)) === 'ECHO: patience [[sleep:800]]', 'no echo after the sleep');
    return from;
  },
  async steer() {
    const pi = await sharedPi();
    const from = pi.events.length;
    const id = pi.send({ type: 'prompt', message: 'take your time [[slow]]' });
    await pi.waitFor((r) => r.type === 'message_update', 'the slow reply to stream', from);
    const steerId = pi.send({ type: 'steer', message: 'steer: use plan B' });
    const ack = await pi.response(steerId, from);
    check(ack.data?.disposition === 'queued', `steer disposition: ${JSON.stringify(ack)}`);
    await pi.response(id, from);
    await pi.settled(from);
    check(textOf(lastAssistant(pi, from)) === 'ECHO: steer: use plan B', 'the steer was not answered last');
    check(fake.requests.at(-1).lastUserText === 'steer: use plan B', 'the steer did not reach the model');
    return from;
  },
  async abort() {
    const pi = await sharedPi();
    const from = pi.events.length;
    pi.send({ type: 'prompt', message: 'long one [[slow]]' });
    await pi.waitFor((r) => r.type === 'message_update', 'the slow reply to stream', from);
    await pi.response(pi.send({ type: 'steer', message: 'DROPPED-STEER' }), from);
    // As multi_agent.py does: clear the queue first, or the steer would run after the abort.
    pi.send({ type: 'clear_queue' });
    const abortId = pi.send({ type: 'abort' });
    const settled = await pi.settled(from);
    check(settled.aborted === true, 'abort did not settle as aborted');
    await pi.response(abortId, from);
    const settledAt = pi.events.findIndex((e, i) => i >= from && e.record.type === 'agent_settled');
    const abortAt = pi.events.findIndex((e, i) => i >= from && e.record.type === 'response' && e.record.id === abortId);
    check(abortAt > settledAt, 'pi answered abort before the run settled');
    const reply = lastAssistant(pi, from);
    check(reply.stopReason === 'aborted' && textOf(reply).startsWith('SLOW-REPLY'), `aborted reply: ${JSON.stringify(reply).slice(0, 200)}`);
    // The next run must not see the cleared steer.
    const next = await run(pi, 'after abort');
    check(textOf(lastAssistant(pi, next)) === 'ECHO: after abort', 'no echo after the abort');
    check(!JSON.stringify(fake.requests.at(-1).body.messages).includes('DROPPED-STEER'), 'the cleared steer reached the model');
    return from;
  },
  async resume() {
    if (shared) await shared.stop();
    shared = undefined;
    const files = readdirSync(sessionDir).filter((f) => /^[^_]+_smoke\.jsonl$/.test(f));
    check(files.length === 1, `expected one <timestamp>_smoke.jsonl session file, found ${JSON.stringify(readdirSync(sessionDir))}`);
    const pi = await sharedPi(); // same --session-id, same cwd
    const from = await run(pi, 'resumed?');
    const history = JSON.stringify(fake.requests.at(-1).body.messages);
    check(history.includes('hello smoke'), 'the resumed run did not carry the earlier conversation');
    check(readdirSync(sessionDir).length === 1, 'resume created a second session file');
    await pi.stop();
    shared = undefined;
    return { pi, from };
  },
  async closeStdin() {
    const pi = spawnPi('hang-close');
    const before = fake.requests.length;
    pi.send({ type: 'prompt', message: 'never ends [[hang]]' });
    await waitUntil(() => fake.requests.length > before, 'the [[hang]] request to reach the server');
    await pi.waitFor((r) => r.type === 'message_update', 'the first chunk of the hanging reply');
    const closedAt = Date.now();
    const eventsAtClose = pi.events.length;
    pi.child.stdin.end();
    const exit = await pi.exitPromise;
    const ms = exit.at - closedAt;
    if (verbose) console.log(`# closeStdin: pi exited code=${exit.code} signal=${exit.signal} ${ms} ms after stdin closed, events after the close: ${JSON.stringify(pi.events.slice(eventsAtClose).map((e) => e.record.type))}`);
    check(ms < 5000, `pi took ${ms} ms to exit after stdin closed`);
    check(!pi.events.slice(eventsAtClose).some((e) => e.record.type === 'agent_settled'), 'agent_settled after stdin closed');
    return { pi, from: 0 };
  },
  async sigterm() {
    const pi = spawnPi('hang-term');
    const before = fake.requests.length;
    pi.send({ type: 'prompt', message: 'never ends either [[hang]]' });
    await waitUntil(() => fake.requests.length > before, 'the [[hang]] request to reach the server');
    const sentAt = Date.now();
    pi.child.kill('SIGTERM');
    const exit = await pi.exitPromise;
    if (verbose) console.log(`# sigterm: pi exited code=${exit.code} signal=${exit.signal} ${exit.at - sentAt} ms after SIGTERM`);
    check(exit.at - sentAt < 5000, 'pi ignored SIGTERM');
    return { pi, from: 0 };
  },
};

let passed = 0;
let failed = 0;
const spawned = [];
for (const [name, fn] of Object.entries(cases)) {
  if (only.length && !only.includes(name)) continue;
  const started = Date.now();
  try {
    const result = await fn();
    const pi = typeof result === 'number' ? shared : result.pi;
    const from = typeof result === 'number' ? result : result.from;
    spawned.push(pi);
    console.log(`ok ${name} (${Date.now() - started} ms)`);
    if (verbose) for (const line of describe(pi.events.slice(from))) console.log(`    ${line}`);
    passed++;
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error.message}`);
  }
}

if (shared) await shared.stop();
await fake.close();
try {
  await waitForNoProcesses(root, 5000);
} catch (error) {
  failed++;
  console.log(`FAIL leftovers: ${error.message}`);
}
if (verbose) {
  const startLine = spawned.find(Boolean)?.stderr.trim().split('\n')[0];
  if (startLine) console.log(`# pi stderr at start: ${startLine}`);
}
if (failed === 0) rmSync(root, { recursive: true, force: true });
else console.log(`(kept ${root} for inspection)`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
