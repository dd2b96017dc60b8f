// Test harness for running the real pi (tools/pi/pi) against the fake model server:
// an isolated pi environment per test, and /proc scans to prove no process was left.
// Plain Node (20 and 22), no dependencies; types in harness.d.mts.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export { startFakeLlm, planReply, MODEL_ID } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));

export const REPO_ROOT = resolve(here, '..', '..');
export const PI_BIN = join(REPO_ROOT, 'tools', 'pi', 'pi');
export const PROVIDER = 'fake';
export const MODEL = 'fake/fake-model';
// pi enables Node's compile cache, by default under TMPDIR. A fresh TMPDIR per test would
// recompile the 10 MB bundle on every start (about 0.3 s of CPU each); one shared cache
// beside the install avoids that. Node checksums cache entries, so parallel writers are safe.
export const SHARED_COMPILE_CACHE = join(REPO_ROOT, 'tools', 'pi', 'node_modules', '.cache', 'node-compile-cache');

// Caller variables that would leak the developer's own pi, model choice or job nesting
// into a test; the runner contract reads every one of these.
const DROPPED_PREFIXES = ['MULTI_AGENT_', 'PI_', 'HERDR_', 'XDG_'];
// Node flags meant for the caller (a test runner's loaders, say) must not reach pi's Node 22.
const DROPPED_NAMES = new Set(['NODE_OPTIONS']);

function writeJson(file, value) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Write pi's `models.json` and `settings.json` into `agentDir` so that pi, without `--model`,
 * talks to the fake server on `port` (provider `fake`, model `fake-model`).
 */
export function writeAgentConfig(agentDir, port, { retryBaseDelayMs = 100 } = {}) {
  mkdirSync(agentDir, { recursive: true });
  writeJson(join(agentDir, 'models.json'), {
    providers: {
      [PROVIDER]: {
        baseUrl: `http://127.0.0.1:${port}/v1`,
        api: 'openai-completions',
        apiKey: 'not-a-secret',
        models: [
          {
            id: 'fake-model',
            name: 'Fake model (tools/fake-llm)',
            reasoning: false,
            input: ['text'],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 128000,
            maxTokens: 4096,
          },
        ],
      },
    },
  });
  writeJson(join(agentDir, 'settings.json'), {
    defaultProvider: PROVIDER,
    defaultModel: 'fake-model',
    // pi waits 2 s before its first retry by default; [[500-once]] tests need not.
    retry: { enabled: true, maxRetries: 3, baseDelayMs: retryBaseDelayMs },
    quietStartup: true,
    enableInstallTelemetry: false,
    enableAnalytics: false,
  });
}

/**
 * Lays out an isolated pi world under `root` (which must exist) that talks to the fake
 * server on `port`, and returns the environment to run `prun-job` (or pi) with.
 */
export function makePiEnv({ port, root, retryBaseDelayMs = 100, compileCacheDir = SHARED_COMPILE_CACHE, extraEnv = {} }) {
  if (!Number.isInteger(port) || port <= 0) throw new TypeError(`makePiEnv: port must be a positive integer, got ${port}`);
  if (typeof root !== 'string' || root === '') throw new TypeError('makePiEnv: root must be a directory path');
  const agentDir = join(root, 'agent');
  const stateHome = join(root, 'state');
  const tmpDir = join(root, 'tmp');
  const home = join(root, 'home');
  const cwd = join(root, 'project');
  for (const dir of [agentDir, stateHome, tmpDir, home, cwd]) mkdirSync(dir, { recursive: true });

  writeAgentConfig(agentDir, port, { retryBaseDelayMs });

  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || DROPPED_NAMES.has(key) || DROPPED_PREFIXES.some((prefix) => key.startsWith(prefix))) continue;
    env[key] = value;
  }
  Object.assign(env, {
    MULTI_AGENT_PI_BIN: PI_BIN,
    PI_CODING_AGENT_DIR: agentDir,
    XDG_STATE_HOME: stateHome,
    TMPDIR: tmpDir,
    HOME: home,
    PI_OFFLINE: '1',
    PI_TELEMETRY: '0',
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    NO_COLOR: '1',
    ...(compileCacheDir ? { NODE_COMPILE_CACHE: compileCacheDir } : {}),
    ...extraEnv,
  });
  return { env, agentDir, stateHome, tmpDir, home, cwd };
}

/** Reads a NUL-separated /proc file as a list, or null if the process vanished or hides it. */
function readProcList(pid, name) {
  try {
    const raw = readFileSync(`/proc/${pid}/${name}`, 'utf8');
    if (raw === '') return null; // kernel threads and zombies
    // pi sets process.title, which leaves "pi" and a run of NULs where its argv was.
    return raw.replace(/\0+$/, '').split('\0');
  } catch {
    return null;
  }
}

function toPredicate(match) {
  if (typeof match === 'function') return match;
  if (match instanceof RegExp) return (argv, _pid, environ) => match.test(argv.join(' ')) || environ.some((v) => match.test(v));
  const needle = String(match);
  return (argv, _pid, environ) => argv.join(' ').includes(needle) || environ.some((v) => v.includes(needle));
}

/**
 * Live processes (other than this one) that `match`: a predicate (argv, pid, environ), or a
 * string/RegExp tested on the argv joined by spaces and, unless { environ: false }, on each
 * NAME=value of the process environment too. The environment is what finds pi: it retitles
 * itself to plain `pi`, so its --session-dir argument is gone from /proc, but its
 * PI_CODING_AGENT_DIR (and a runner's) still names the test root.
 */
export function listProcesses(match, { environ = true } = {}) {
  const test = toPredicate(match);
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const argv = readProcList(pid, 'cmdline');
    if (!argv) continue;
    const env = environ ? (readProcList(pid, 'environ') ?? []) : [];
    if (test(argv, pid, env)) found.push({ pid, argv, cmdline: argv.join(' ') });
  }
  return found;
}

/**
 * Polls until no process matches (see listProcesses). Resolves to [] on success; rejects
 * after `timeoutMs` with an error naming the survivors.
 */
export async function waitForNoProcesses(pattern, timeoutMs = 5000, options = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = listProcesses(pattern, options);
    if (left.length === 0) return left;
    if (Date.now() >= deadline) {
      const names = left.map((p) => `${p.pid}: ${p.cmdline.slice(0, 200)}`).join('; ');
      throw new Error(`waitForNoProcesses: still running after ${timeoutMs} ms: ${names}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
