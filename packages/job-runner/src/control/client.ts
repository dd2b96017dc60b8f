// The client side of the control socket: what `steer`, `abort` and `kill` send to a job's runner
// (ours or multi_agent.py's). The runner's side is server.ts beside this file.
import net from 'node:net';
import { basename } from 'node:path';
import { CommandError, NotRunningError } from '../errors.js';
import { socketPath } from '../paths.js';
import { jobState } from '../state.js';
import { sleep, waitWhile, type Timings } from '../timing.js';
import { parseLine, pyDumps, type ControlAnswer, type ControlRequest } from './protocol.js';

function tryConnect(path: string): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    const socket = net.createConnection(path);
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(undefined);
    });
  });
}

/**
 * Connect to the job's runner. A refused or missing socket means no runner listens; while the
 * lock is still held, a runner is starting or exiting, so the connection is retried a moment.
 */
export async function connectRunner(jobDir: string, timings: Timings): Promise<net.Socket> {
  const path = socketPath(jobDir);
  const end = Date.now() + timings.lockS * 1000;
  for (;;) {
    const socket = await tryConnect(path);
    if (socket) return socket;
    if (jobState(jobDir) !== 'running') throw new NotRunningError();
    if (Date.now() >= end) throw new CommandError(`the runner of job ${basename(jobDir)} does not accept requests`);
    await sleep(50);
  }
}

/**
 * Send one request and return the reply; undefined when the runner closed the connection
 * without one (it only does so when it exits). Fails with timeoutMessage after timings.ackS.
 */
export async function sendRequest(
  jobDir: string,
  request: ControlRequest,
  timeoutMessage: string,
  timings: Timings,
): Promise<ControlAnswer | undefined> {
  const socket = await connectRunner(jobDir, timings);
  const line = await new Promise<string | 'timeout'>((resolve) => {
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, timings.ackS * 1000);
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(data);
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\n')) done();
    });
    socket.on('end', done);
    socket.on('error', done);
    socket.write(pyDumps(request) + '\n');
  });
  if (line === 'timeout') throw new CommandError(timeoutMessage);
  const reply = parseLine(line);
  return reply !== null && typeof reply === 'object' && !Array.isArray(reply) ? (reply as ControlAnswer) : undefined;
}

/** Send a steer or abort; the runner's error becomes the command's error. */
export async function sendControl(jobDir: string, request: ControlRequest, timings: Timings): Promise<ControlAnswer> {
  const name = basename(jobDir);
  const reply = await sendRequest(
    jobDir,
    request,
    `the runner of job ${name} did not reply within ${Math.trunc(timings.ackS)} seconds`,
    timings,
  );
  if (reply === undefined) {
    if (await waitWhile(() => jobState(jobDir) === 'running', 2)) throw new NotRunningError();
    throw new CommandError(`the runner of job ${name} closed the connection without a reply`);
  }
  if (!reply['ok']) throw new CommandError(typeof reply['error'] === 'string' && reply['error'] ? reply['error'] : 'request failed');
  return reply;
}
