import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { it as baseIt } from 'vitest';
import yauzl from 'yauzl';
import { STATE_FILES } from '@prun/unit-state';

export const BIN_PATH = fileURLToPath(new URL('../bin/prun-snapshot-tail.js', import.meta.url));

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A private temp dir (0700, as a snapshot destination's parent must not matter). */
export function tempRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'prun-snapshot-test-'));
  chmodSync(dir, 0o700);
  return dir;
}

export function removeRoot(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** `<root>/prun-task-<name>/tail` with the given content; returns the unit dir. */
export function makeUnit(root: string, name: string, tail: Buffer | string | null = ''): string {
  const unit = join(root, `prun-task-${name}`);
  mkdirSync(unit, { recursive: true });
  if (tail !== null) writeFileSync(join(unit, STATE_FILES.tail), tail);
  return unit;
}

export function tailPath(unit: string): string {
  return join(unit, STATE_FILES.tail);
}

/** A controlled environment: no inherited XDG/HOME surprises, no colour, agent-neutral. */
export function baseEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...extra };
}

/**
 * Run the built bin. With `umask0` it runs under `umask 0`, so any mode it produces must have
 * been set explicitly.
 */
export function runBin(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; umask0?: boolean; timeoutMs?: number } = {},
): Promise<RunResult> {
  const started = Date.now();
  const command = options.umask0 ? '/bin/sh' : process.execPath;
  const argv = options.umask0 ? ['-c', 'umask 0 && exec "$0" "$@"', process.execPath, BIN_PATH, ...args] : [BIN_PATH, ...args];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, argv, {
      env: options.env ?? baseEnv(),
      cwd: options.cwd ?? process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 20_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolvePromise({ code, signal, stdout, stderr, ms: Date.now() - started }));
  });
}

export function tempLeftovers(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.startsWith('.snap-'));
  } catch {
    return [];
  }
}

export interface ReadBack {
  names: string[];
  methods: number[];
  members: Map<string, Buffer>;
}

/** Read an archive with yauzl: member names in order, methods, contents. */
export async function readArchive(path: string): Promise<ReadBack> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  const names: string[] = [];
  const methods: number[] = [];
  const members = new Map<string, Buffer>();
  try {
    for await (const entry of zip.eachEntry()) {
      names.push(entry.fileName);
      methods.push(entry.compressionMethod);
      const stream = await zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      members.set(entry.fileName, Buffer.concat(chunks));
    }
  } finally {
    zip.close();
  }
  return { names, methods, members };
}

function hasTool(name: string): boolean {
  return spawnSync(name, ['-h'], { stdio: 'ignore' }).error === undefined;
}

export const HAVE_UNZIP = hasTool('unzip');
export const HAVE_ZIPINFO = hasTool('zipinfo');
export const HAVE_MKFIFO = spawnSync('mkfifo', ['--version'], { stdio: 'ignore' }).error === undefined;

/** Wait for `condition` to hold, polling, up to `deadlineMs`. */
export async function waitFor(condition: () => boolean, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((resolveWait) => setTimeout(resolveWait, 10));
  }
}

/** A vitest `it` whose tests each get their own private temp root (safe to run concurrently). */
export const it = baseIt.extend<{ root: string }>({
  // eslint-disable-next-line no-empty-pattern
  root: async ({}, use) => {
    const dir = tempRoot();
    await use(dir);
    removeRoot(dir);
  },
});

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** The nine manifest fields in their contractual order. */
export const MANIFEST_KEYS = [
  'schema_version',
  'captured_at',
  'source_path',
  'source_size_at_open',
  'bytes_copied',
  'sha256',
  'source_may_be_live',
  'capture_outcome',
  'note',
];

/** What `--json` prints. */
export interface JsonOutcome {
  published: string;
  manifest: Record<string, unknown> & { bytes_copied: number; source_size_at_open: number; sha256: string };
  warning: string | null;
}
