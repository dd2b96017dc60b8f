// Shared set-up for the black-box tests: the built bin, an isolated pi world per test, and the
// check that no pi or runner of the test is left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { fileURLToPath } from 'node:url';
// Typed by the harness.d.mts beside it.
import * as harnessModule from '../../../tools/fake-llm/harness.mjs';
import type * as HarnessTypes from '../../../tools/fake-llm/harness.d.mts';

export const harness: typeof HarnessTypes = harnessModule;
export const BIN = fileURLToPath(new URL('../bin/prun-job.js', import.meta.url));
/**
 * multi_agent.py, the original prun-job is compatible with, for the interoperability test. It is
 * not part of this repository: PRUN_ORIGINALS names a folder holding it (as for the bench).
 */
export const SEED = process.env['PRUN_ORIGINALS'] ? join(process.env['PRUN_ORIGINALS'], 'multi_agent.py') : '';

/**
 * Live processes of a test: runners (their command line holds the job directory) and pi with
 * anything it started (pi retitles itself to `pi`, so it is found by the MULTI_AGENT_JOB the
 * runner gives it).
 */
export function processesOf(root: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      const job = environ.find((v) => v.startsWith('MULTI_AGENT_JOB='))?.slice('MULTI_AGENT_JOB='.length);
      const ofRoot = job !== undefined && (job === root || job.startsWith(`${root}/`));
      if (cmdline.includes(`__runner ${root}`) || ofRoot) found.push({ pid: Number(entry), cmdline });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** Pi processes (and their children) of one job. */
export function piOf(jobDir: string): { pid: number; cmdline: string }[] {
  return processesOf(jobDir).filter((p) => !p.cmdline.includes('__runner'));
}

export async function waitForNone(root: string, timeoutMs = 20_000): Promise<{ pid: number; cmdline: string }[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const left = processesOf(root);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface World {
  root: string;
  env: Record<string, string>;
  cwd: string;
  agentDir: string;
  stateHome: string;
  /** Run the built bin to completion. */
  job: (args: string[], opts?: { input?: string; env?: Record<string, string>; cwd?: string }) => Promise<RunResult>;
  /** Start the built bin and return the process (for signals). */
  spawnJob: (args: string[], opts?: { env?: Record<string, string> }) => { child: ChildProcess; done: Promise<RunResult> };
  jobDir: (name: string) => string;
  read: (name: string, file: string) => string;
  cleanup: () => Promise<void>;
}

function collect(child: ChildProcess, input?: string): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  if (input !== undefined) child.stdin?.end(input);
  else child.stdin?.end();
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** A pi world under a fresh temp root talking to the fake server on `port` (0: no server, for tests without pi). */
export function makeWorld(port: number, extraEnv: Record<string, string> = {}): World {
  const root = mkdtempSync(join(tmpdir(), 'prun-job-t-'));
  const pi = harness.makePiEnv({ port: port || 1, root });
  const env: Record<string, string> = { ...pi.env, PWD: pi.cwd, ...extraEnv };
  const world: World = {
    root,
    env,
    cwd: pi.cwd,
    agentDir: pi.agentDir,
    stateHome: pi.stateHome,
    job: (args, opts = {}) => {
      const cwd = opts.cwd ?? pi.cwd;
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd,
        env: { ...env, PWD: cwd, ...(opts.env ?? {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      return collect(child, opts.input);
    },
    spawnJob: (args, opts = {}) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: pi.cwd,
        env: { ...env, ...(opts.env ?? {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      return { child, done: collect(child) };
    },
    jobDir: (name) => {
      const slug = pi.cwd.replace(/[^A-Za-z0-9]/g, '-').replace(/^-+/, '');
      return join(pi.stateHome, 'pi-multi-agent', slug, 'jobs', name);
    },
    read: (name, file) => {
      const path = join(world.jobDir(name), file);
      return existsSync(path) ? readFileSync(path, 'utf8') : '';
    },
    cleanup: async () => {
      // No runner or pi of the test may outlive it.
      const leftovers = await waitForNone(root);
      for (const p of leftovers) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
      rmSync(root, { recursive: true, force: true });
      if (leftovers.length > 0) throw new Error(`processes left behind: ${leftovers.map((p) => p.cmdline).join(' | ')}`);
    },
  };
  return world;
}

export async function until<T>(check: () => T | undefined | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The `key: value` lines of a text block as a map. */
export function fields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+): (.*)$/.exec(line);
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}

export function systemPromptOf(request: HarnessTypes.FakeLlmRequest): string {
  const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
  const system = messages.find((m) => m.role === 'system' || m.role === 'developer');
  if (!system) return '';
  return typeof system.content === 'string' ? system.content : JSON.stringify(system.content);
}

export function toolNamesOf(request: HarnessTypes.FakeLlmRequest): string[] {
  const tools = (request.body?.tools ?? []) as { function?: { name?: string } }[];
  return tools.map((t) => t.function?.name ?? '').sort();
}

/**
 * One fake model server for the test file and one fresh world per test, checked and removed
 * after it. `fresh()` makes the test's world; `requests` are the server's, in arrival order.
 */
export function useFakeLlm(): { fresh: () => World; llm: () => HarnessTypes.FakeLlm } {
  let llm: HarnessTypes.FakeLlm | undefined;
  let world: World | undefined;
  beforeAll(async () => {
    llm = await harness.startFakeLlm();
  });
  afterAll(async () => {
    await llm?.close();
  });
  afterEach(async () => {
    await world?.cleanup();
    world = undefined;
  });
  const server = (): HarnessTypes.FakeLlm => {
    if (!llm) throw new Error('the fake model server is not running');
    return llm;
  };
  return {
    llm: server,
    fresh: () => {
      world = makeWorld(server().port);
      return world;
    },
  };
}
