// What a batch's supervisor process leaves in the batch directory, and how it is read back.
// The supervisor (supervise/main.ts) hosts the batch's running units in-process; these files
// are how a driver that did not start it (a resumed batch), `prun status` and `prun clean`
// learn which units it still runs and how the others ended. The layout is in the package
// README ("The batch directory", "Supervision").
//
//   supervisors/<pid>-<start>/           one supervisor process (pid and /proc start time)
//     units/<id>.json                    {"id","attempt","state":"running"|"ended","exit_code"}
//     stop/<id>.<attempt>.<SIGNAL>.<hex>  a request to stop one attempt of one unit (src/stop.ts), consumed
//     drained                            its driver is gone: every unit it started has a record, and one
//                                        it had not started (waiting for a worker slot) never will
//   supervisors/log                      what the supervisors themselves print (normally nothing)
//
// Kept free of zod and of the dispatcher so the supervisor starts small.
import { join } from 'node:path';
import { readHead, writeFileAtomic } from '@prun/kit/fs';

export const SUPERVISORS_DIR = 'supervisors';

/** One supervisor process, named for the life of the machine: a reused pid has a later start. */
export interface SupervisorIdentity {
  pid: number;
  start: string;
}

export function supervisorsRoot(batchDir: string): string {
  return join(batchDir, SUPERVISORS_DIR);
}

/** The folder of one supervisor: `<pid>-<start>`. */
export function supervisorPaths(batchDir: string, who: SupervisorIdentity) {
  const root = join(supervisorsRoot(batchDir), `${who.pid}-${who.start}`);
  return {
    root,
    units: join(root, 'units'),
    unit: (id: string) => join(root, 'units', `${id}.json`),
    stop: join(root, 'stop'),
    drained: join(root, 'drained'),
  };
}
export type SupervisorPaths = ReturnType<typeof supervisorPaths>;

/** The identity a supervisor folder's name gives, or null for any other name. */
export function parseSupervisorName(name: string): SupervisorIdentity | null {
  const match = /^([1-9]\d*)-(\d+)$/.exec(name);
  return match === null ? null : { pid: Number(match[1]), start: match[2]! };
}

/** One hosted unit as its supervisor records it: before its dispatch starts, and once it ended. */
export interface HostedRecord {
  id: string;
  attempt: number;
  state: 'running' | 'ended';
  /** The in-process dispatch's exit code once ended (what the bin would have exited with). */
  exit_code: number | null;
}

/**
 * Publish a unit's record (temp file and rename: a reader sees the old record or the new one).
 * Not fsynced: it only has to outlive the supervisor process, not the machine; after a machine
 * crash the unit's result file decides, as for any dispatch that ended unwatched.
 */
export function writeHostedRecord(path: string, record: HostedRecord): void {
  writeFileAtomic(path, `${JSON.stringify(record)}\n`, { tag: 'prun-supervisor', durable: false, createParent: false });
}

/** A unit's record, or null when absent or not a record (checked by hand: no zod here). */
export function readHostedRecord(path: string): HostedRecord | null {
  const head = readHead(path, { maxBytes: 64 * 1024 });
  if (!head.ok) return null;
  let value: unknown;
  try {
    value = JSON.parse(head.text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const exitCode = record.exit_code;
  if (typeof record.id !== 'string' || !Number.isInteger(record.attempt)) return null;
  if (record.state !== 'running' && record.state !== 'ended') return null;
  if (exitCode !== null && !Number.isInteger(exitCode)) return null;
  return { id: record.id, attempt: record.attempt as number, state: record.state, exit_code: exitCode as number | null };
}

/** What the driver hands its supervisor on their private socket, one JSON line per message. */
export interface StartRequest {
  op: 'start';
  id: string;
  attempt: number;
  /** The dispatcher's options, exactly as `prun-dispatch-agy` would get them. */
  argv: string[];
  /**
   * How the unit's environment differs from the supervisor's own, which is the driver's batch
   * environment it was started with (`unitEnvChanges` in src/batch.ts): a variable set to this
   * value, or removed (null). Never written to disk. Only the difference goes over the socket,
   * so a hand-over does not copy, encode and parse the whole environment once per unit.
   */
  envChanges: EnvChanges;
  /** Where the unit's stdout (its STATE-DIR line) and stderr go: the batch's logs/<id>.*. */
  stdout: string;
  stderr: string;
  /**
   * How many workers this supervisor may have running at once (the batch's --jobs, less the
   * units other supervisors still run): a request beyond them waits here, unrecorded, and
   * starts the moment a hosted unit's worker exits. The latest request's value counts.
   */
  slots: number;
}

/** Environment variables to set (a string) or remove (null), over a base environment. */
export type EnvChanges = Record<string, string | null>;

/** `base` with `changes` applied, as a new object (`base` is not touched). */
export function withEnvChanges(base: NodeJS.ProcessEnv, changes: EnvChanges): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete env[name];
    else env[name] = value;
  }
  return env;
}

/**
 * What the supervisor tells its driver when a unit that waited for a worker slot has started
 * (its record written): when it started, for the ledger's `started_at`, which said when it was
 * handed over.
 */
export interface StartNotice {
  id: string;
  attempt: number;
  started_at: string;
}

/** What the supervisor tells its driver when a unit's dispatch has ended (after its record), or was stopped unstarted. */
export interface EndNotice {
  id: string;
  attempt: number;
  exit_code: number;
  /** False for a unit stopped while it waited for a worker slot: it never started (and has no record). */
  started?: false;
}

/**
 * The line framing both ends of the socket use: feed it text as it arrives, it calls `onLine`
 * for each whole line. A partial line longer than `maxBytes` is dropped (`onOverflow`).
 */
export function lineSplitter(onLine: (line: string) => void, maxBytes: number, onOverflow: () => void = () => undefined): (text: string) => void {
  let buffered = '';
  return (text) => {
    buffered += text;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      onLine(line);
    }
    if (buffered.length > maxBytes) {
      buffered = '';
      onOverflow();
    }
  };
}
