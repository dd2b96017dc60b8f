// Types for harness.mjs (and the server it re-exports), so TypeScript tests can import them.

/** One request the fake server received, in arrival order. */
export interface FakeLlmRequest {
  method: string | undefined;
  /** Request path with query, e.g. "/v1/chat/completions". */
  path: string | undefined;
  /** Parsed JSON body for chat completions; the raw text for anything else. */
  body: any;
  /** Text of the last `role: "user"` message ("" when none). */
  lastUserText: string;
  /** How the server answered: "text" | "tool" | "status" | "hang" | "bad-json" | "other". */
  reply: string;
}

export interface FakeLlm {
  port: number;
  /** Base URL including /v1, e.g. "http://127.0.0.1:41234/v1". */
  url: string;
  requests: FakeLlmRequest[];
  /** Lets the replies held by `[[gate:NAME]]` go on (now and later ones). */
  openGate(name: string): void;
  /** Ends open (e.g. [[hang]]) streams and stops listening. */
  close(): Promise<void>;
}

export interface ReplyPlan {
  kind: 'text' | 'tool' | 'status' | 'hang';
  text?: string;
  chunks?: string[];
  intervalMs?: number;
  status?: number;
  name?: string;
  args?: Record<string, unknown>;
  delayMs: number;
  userText: string;
}

export declare const MODEL_ID: 'fake-model';
export declare function startFakeLlm(opts?: { port?: number }): Promise<FakeLlm>;
/** The pure reply decision; `seen` carries the per-server "once" memory. */
export declare function planReply(body: unknown, seen: Set<string>): ReplyPlan;

/** Absolute path of the repository root. */
export declare const REPO_ROOT: string;
/** Absolute path of tools/pi/pi, the wrapper that runs the pinned pi on Node 22. */
export declare const PI_BIN: string;
/** "fake" */
export declare const PROVIDER: string;
/** "fake/fake-model" */
export declare const MODEL: string;
/** <repo>/tools/pi/node_modules/.cache/node-compile-cache */
export declare const SHARED_COMPILE_CACHE: string;

export interface PiEnvOptions {
  /** Port of a running fake server. */
  port: number;
  /** Existing directory (e.g. a mkdtemp) to lay the pi world out in. */
  root: string;
  /** pi's retry base delay written to settings.json (pi's own default is 2000). Default 100. */
  retryBaseDelayMs?: number;
  /**
   * NODE_COMPILE_CACHE for pi; default SHARED_COMPILE_CACHE (under tools/pi/node_modules),
   * so starts after the first skip compiling pi. null: leave it to pi (TMPDIR).
   */
  compileCacheDir?: string | null;
  /** Added last, overriding everything else in `env`. */
  extraEnv?: Record<string, string>;
}

export interface PiEnv {
  /**
   * A full environment: the caller's, less NODE_OPTIONS and every MULTI_AGENT_*, PI_*, HERDR_*, XDG_*
   * variable, plus MULTI_AGENT_PI_BIN, PI_CODING_AGENT_DIR, XDG_STATE_HOME, TMPDIR, HOME,
   * PI_OFFLINE=1, PI_TELEMETRY=0, NO_COLOR=1, PATH, NODE_COMPILE_CACHE (see compileCacheDir).
   */
  env: Record<string, string>;
  /** <root>/agent: PI_CODING_AGENT_DIR with models.json and settings.json. */
  agentDir: string;
  /** <root>/state: XDG_STATE_HOME. */
  stateHome: string;
  /** <root>/tmp: TMPDIR. */
  tmpDir: string;
  /** <root>/home: HOME. */
  home: string;
  /** <root>/project: an empty directory to use as the project cwd. */
  cwd: string;
}

export declare function makePiEnv(opts: PiEnvOptions): PiEnv;

export interface ProcessInfo {
  pid: number;
  argv: string[];
  /** argv joined by spaces. */
  cmdline: string;
}

/**
 * A substring of the space-joined argv, a RegExp tested on it, or a predicate. Unless
 * { environ: false }, a substring/RegExp also matches any NAME=value of the process's
 * environment, and a predicate receives it (otherwise `environ` is []).
 */
export type ProcessMatch = string | RegExp | ((argv: string[], pid: number, environ: string[]) => boolean);

export interface ProcessScanOptions {
  /**
   * Also match /proc/<pid>/environ. Default true: pi retitles itself to `pi`, so only its
   * environment (PI_CODING_AGENT_DIR, MULTI_AGENT_JOB, TMPDIR) still names the test root.
   */
  environ?: boolean;
}

/** Live processes other than the caller whose /proc/<pid>/cmdline (and environ) matches. */
export declare function listProcesses(match: ProcessMatch, options?: ProcessScanOptions): ProcessInfo[];
/** Polls every 50 ms; resolves [] once none match, rejects naming survivors after timeoutMs (default 5000). */
export declare function waitForNoProcesses(pattern: ProcessMatch, timeoutMs?: number, options?: ProcessScanOptions): Promise<ProcessInfo[]>;

/** Write pi's models.json and settings.json into `agentDir` so pi uses the fake server on `port`. */
export function writeAgentConfig(agentDir: string, port: number, options?: { retryBaseDelayMs?: number }): void;
