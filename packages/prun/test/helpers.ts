import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type Options, type ResultPromise } from 'execa';

export const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
export const prunBin = join(repoRoot, 'packages/prun/bin/prun.js');
export const agyByPrompt = fileURLToPath(new URL('fixtures/agy-by-prompt.mjs', import.meta.url));

/** A response in the return contract; the fixture puts each unit's id in the header. */
export const RESULT_TEXT = '# {{unit}} result\nConclusion: complete\nFiles: none\nOpen items: none\nVerification: fake agy\n';

export interface Sandbox {
  root: string;
  env: NodeJS.ProcessEnv;
  logDir: string;
  cleanup: () => void;
}

/** A temp root with its own HOME, TMPDIR and fake-agy log, and an env that uses them. */
export function sandbox(extra: NodeJS.ProcessEnv = {}): Sandbox {
  const root = mkdtempSync(join(tmpdir(), 'prun-test-'));
  for (const dir of ['home', 'tmp', 'agy-log']) mkdirSync(join(root, dir));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: join(root, 'home'),
    TMPDIR: join(root, 'tmp'),
    ANTIGRAVITY_BIN: agyByPrompt,
    ANTIGRAVITY_PREFLIGHT: 'off',
    PRUN_AGY_QUOTA_GATE: 'off',
    FAKE_AGY_LAX_EFFORT: '1',
    FAKE_AGY_LOG_DIR: join(root, 'agy-log'),
    FAKE_AGY_RESPONSE: RESULT_TEXT,
    ...extra,
  };
  const cleanup = (): void => {
    // A test that kills a driver on purpose can leave its supervisor hosting a unit that waits on
    // a gate nobody opens: end every process still working in this sandbox before removing it.
    killProcessesUnder(root);
    rmSync(root, { recursive: true, force: true });
  };
  return { root, env, logDir: join(root, 'agy-log'), cleanup };
}

/** Pids of the processes (but this one) whose working directory is `root` or below it. */
export function processesUnder(root: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      continue;
    }
    if (cwd === root || cwd.startsWith(`${root}/`)) found.push(Number(entry));
  }
  return found;
}

/** SIGKILL every process whose working directory is `root` or below it (this sandbox's leftovers). */
export function killProcessesUnder(root: string): void {
  for (const pid of processesUnder(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

export function prun(args: string[], options: Options & { env: NodeJS.ProcessEnv }): ResultPromise<Options> {
  return execa(process.execPath, [prunBin, ...args], { reject: false, extendEnv: false, ...options }) as ResultPromise<Options>;
}

export function writePlan(root: string, units: unknown[], name = 'plan.json'): string {
  const path = join(root, name);
  writeFileSync(path, JSON.stringify({ units }));
  return path;
}

export interface LedgerLine {
  id: string;
  status: string;
  exit_code: number | null;
  state_dir: string | null;
  started_at?: string | null;
  note?: string;
  retry_at?: string;
  attempt?: number;
  /** The supervisor (or, from a prun before supervisors, the dispatcher process) a `running` line names. */
  dispatcher_pid?: number;
}

export function ledger(dir: string): LedgerLine[] {
  return readFileSync(join(dir, 'ledger.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LedgerLine);
}

export function latestStatus(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of ledger(dir)) out[line.id] = line.status;
  return out;
}

export interface AgyCall {
  kind: string;
  pid: number;
  argv: string[];
  prompt: string | null;
}

/** Every fake-agy invocation so far (its `calls.jsonl`): workers, preflight calls, `/usage` queries. */
export function agyCalls(logDir: string): AgyCall[] {
  let text = '';
  try {
    text = readFileSync(join(logDir, 'calls.jsonl'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AgyCall);
}

/** fake-agy's worker invocations, with the unit id each one ran for. */
export function workerCalls(logDir: string): Array<AgyCall & { unit: string | null }> {
  return agyCalls(logDir)
    .filter((call) => call.kind === 'worker')
    // The unit's own `UNIT-ID:<id>` marker, else (a restatement turn) the relay's `# <id> result` shape line.
    .map((call) => ({ ...call, unit: /UNIT-ID:([\w-]+)/.exec(call.prompt ?? '')?.[1] ?? /^# ([\w-]+) result$/m.exec(call.prompt ?? '')?.[1] ?? null }));
}

/**
 * Worker starts per unit, from the fixture's start log (written before the worker reads its
 * prompt, so a worker killed at once still counts; calls.jsonl misses those). The unit is named
 * by the worker's cwd: its clone (`clones/<id>`) or its state dir's `work/`
 * (`prun-task-<hash>-<id>-<pid>-<nonce>/work`).
 */
export function workerStarts(logDir: string): Record<string, number> {
  let text = '';
  try {
    text = readFileSync(join(logDir, 'starts.jsonl'), 'utf8');
  } catch {
    return {};
  }
  const out: Record<string, number> = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const { cwd } = JSON.parse(line) as { cwd: string };
    const parts = cwd.split('/');
    const unit = parts.at(-1) === 'work' ? (/^prun-task-[0-9a-f]+-(.+)-\d+-[0-9a-f]+$/.exec(parts.at(-2) ?? '')?.[1] ?? '?') : (parts.at(-1) ?? '?');
    out[unit] = (out[unit] ?? 0) + 1;
  }
  return out;
}

/** A `running` ledger line's hosting: its supervisor's pid and start time, when it names one. */
interface HostedLine {
  id: string;
  attempt?: number;
  status: string;
  dispatcher_pid?: number;
  dispatcher_start?: string;
  supervised?: boolean;
}

/**
 * Whether the unit's latest `running` attempt has been handed to its supervisor and recorded
 * there (`supervisors/<pid>-<start>/units/<id>.json`): from then on the dispatch runs whatever
 * happens to the driver. The `running` line itself is written just before the hand-over.
 */
export function handedOver(dir: string, id: string): boolean {
  const line = (ledger(dir) as unknown as HostedLine[]).findLast((l) => l.id === id);
  if (line?.status !== 'running' || line.supervised !== true) return false;
  try {
    const record = JSON.parse(readFileSync(join(dir, 'supervisors', `${line.dispatcher_pid}-${line.dispatcher_start}`, 'units', `${id}.json`), 'utf8')) as { attempt: number };
    return record.attempt === line.attempt;
  } catch {
    return false;
  }
}

/** Poll until `check` holds or the deadline passes (then throw with `what`). */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Let every worker waiting on `[[gate NAME]]` in its prompt go on. */
export function openGate(box: Sandbox, name: string): void {
  writeFileSync(join(box.logDir, `gate-${name}`), '');
}

/**
 * A plan unit steered by the fixture: `UNIT-ID:<id>` in its prompt, fixture markers after it,
 * and a model outside both quota groups (never gated) unless `extra` names one.
 */
export function planUnit(id: string, markers = '', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, prompt: `UNIT-ID:${id} do the work ${markers}`, model: 'fake-model-x', ...extra };
}
