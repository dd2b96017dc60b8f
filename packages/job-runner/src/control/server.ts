// The runner's side of the control socket (the client is client.ts beside this file).
//
// As in multi_agent.py, the command that starts a run binds the socket and hands the listening
// descriptor to the runner, so `run --background` returns without waiting for the runner's
// start-up and an immediate `steer` waits in the socket's backlog instead of failing.
import { mkdirSync, readdirSync, renameSync } from 'node:fs';
import net from 'node:net';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CommandError, NOT_RUNNING } from '../errors.js';
import { checkSocketPath, socketPath } from '../paths.js';
import { removeFile } from '../text.js';
import { sleep } from '../timing.js';
import { parseLine, pyDumps, type ControlReply } from './protocol.js';

/** A listening socket bound by the starting command, to be inherited by the runner. */
export interface HandedSocket {
  fd: number;
  path: string;
  /** Close this process's copy; the runner's copy keeps listening and the path stays. */
  release: () => void;
}

/**
 * Bind the job's control socket at its final path and return its descriptor; called with the
 * job's lock held, so a leftover socket file belongs to a runner that is gone.
 *
 * Node accepts connections on a listening server whenever its event loop polls, and closing a
 * server removes its path; so the socket is bound under a temporary name, renamed into place, and
 * released before this process returns to its event loop: no connection is ever accepted here.
 */
export async function bindForRunner(jobDir: string): Promise<HandedSocket> {
  checkSocketPath(jobDir);
  const path = socketPath(jobDir);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  removeFile(path);
  // The temporary name is as long as the final one, so it fits sun_path too. Another one of this
  // job can only be a killed command's leftover: a live one would hold the lock we hold.
  const stem = path.slice(0, -'.sock'.length);
  removeStaleTemporaries(stem);
  const temporary = `${stem}.${randomBytes(2).toString('hex')}`;
  const server = net.createServer();
  let failure: Error | undefined;
  server.on('error', (error) => {
    failure = error;
  });
  server.listen(temporary);
  // For a path, Node binds and listens synchronously; a failure is only emitted a tick later.
  const fd = (server as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) {
    await new Promise((resolve) => setImmediate(resolve));
    server.close();
    removeFile(temporary);
    throw new CommandError(`could not create the control socket ${path}: ${failure?.message ?? 'bind failed'}`);
  }
  try {
    renameSync(temporary, path);
  } catch (error) {
    server.close();
    removeFile(temporary);
    throw new CommandError(`could not create the control socket ${path}: ${(error as Error).message}`);
  }
  return { fd, path, release: () => server.close() };
}

function removeStaleTemporaries(stem: string): void {
  const prefix = `${basename(stem)}.`;
  let entries: string[] = [];
  try {
    entries = readdirSync(dirname(stem));
  } catch {
    return;
  }
  for (const entry of entries) {
    if (entry.startsWith(prefix) && /^[0-9a-f]{4}$/.test(entry.slice(prefix.length))) removeFile(join(dirname(stem), entry));
  }
}

/** What the runner does with one request; `answer` may be called later (a steer waits for pi). */
export type RequestHandler = (request: unknown, answer: (reply: ControlReply) => void) => void;

/** Serves the control socket in the runner: one request line in, one reply line out. */
export class ControlServer {
  private server: net.Server | undefined;
  /** Connections not answered yet: the function that answers each, and whether its request arrived. */
  private readonly open = new Map<net.Socket, { answer: (reply: ControlReply) => void; received: boolean }>();

  constructor(
    private readonly jobDir: string,
    private readonly onRequest: RequestHandler,
  ) {}

  /** Serve the descriptor the starting command bound, or bind the socket here when there is none. */
  async listen(handedFd: number | undefined): Promise<void> {
    // Half-open: a client that ends its side after the request (socat, nc -U) still gets the
    // answer, which for a steer comes only once pi has answered.
    const server = net.createServer({ allowHalfOpen: true }, (conn) => this.onConnection(conn));
    this.server = server;
    let target: { fd: number } | string;
    if (handedFd !== undefined) {
      target = { fd: handedFd };
    } else {
      const path = socketPath(this.jobDir);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // The lock is ours, so a leftover socket file belongs to a runner that is gone.
      removeFile(path);
      target = path;
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(target, () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
  }

  private onConnection(conn: net.Socket): void {
    let data = '';
    let handled = false;
    let answered = false;
    const answer = (reply: ControlReply): void => {
      if (answered) return;
      answered = true;
      this.open.delete(conn);
      if (conn.destroyed) return;
      conn.on('error', () => undefined);
      conn.end(pyDumps(reply) + '\n');
      setTimeout(() => conn.destroy(), 1000).unref();
    };
    const entry = { answer, received: false };
    this.open.set(conn, entry);
    conn.setEncoding('utf8');
    const handle = (): void => {
      if (handled) return;
      handled = true;
      entry.received = true;
      if (!data) {
        // Connected and went away without a request.
        answered = true;
        this.open.delete(conn);
        conn.destroy();
        return;
      }
      this.onRequest(parseLine(data), answer);
    };
    conn.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\n')) handle();
    });
    conn.on('end', handle);
    conn.on('error', () => this.open.delete(conn));
    conn.on('close', () => this.open.delete(conn));
  }

  /**
   * Answer every open request with NOT_RUNNING, stop listening and remove the socket (called
   * while the lock is still ours, so no new run has bound the path).
   */
  async close(): Promise<void> {
    // Connections whose request line has not arrived get a moment to send it, so the command
    // reads the answer instead of a reset.
    const notRunning: ControlReply = { ok: false, error: NOT_RUNNING };
    for (const entry of [...this.open.values()]) if (entry.received) entry.answer(notRunning);
    const end = Date.now() + 500;
    while (this.open.size > 0 && Date.now() < end) await sleep(20);
    for (const entry of [...this.open.values()]) entry.answer(notRunning);
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    removeFile(socketPath(this.jobDir));
  }
}
