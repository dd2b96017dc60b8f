import { appendFileSync, closeSync, fsyncSync, openSync, readFileSync } from 'node:fs';
import { z } from 'zod';

export const UNIT_STATUSES = ['queued', 'running', 'done', 'failed', 'deferred'] as const;
export type UnitStatus = (typeof UNIT_STATUSES)[number];

/** One line of `ledger.jsonl`: the state of one unit at one moment. */
export const LedgerEntrySchema = z.object({
  id: z.string(),
  status: z.enum(UNIT_STATUSES),
  model: z.string().nullable(),
  mode: z.string().nullable(),
  prompt_file: z.string(),
  clone_dir: z.string().nullable(),
  result_file: z.string(),
  state_dir: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  /** Why a unit failed without a dispatch, was deferred, or was adopted after a crash. */
  note: z.string().optional(),
  /** For `deferred`: when the next attempt is due (ISO-8601). */
  retry_at: z.string().optional(),
  /** Dispatch attempts so far for this unit, retries and quota deferrals included. */
  attempt: z.number().int().nonnegative().optional(),
  /** The dispatcher's pid while `running`, so a resumed batch can adopt a live dispatch. */
  dispatcher_pid: z.number().int().positive().optional(),
});
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

/**
 * Append one entry as one line and flush it to disk before returning, so a batch killed at any
 * moment leaves a ledger whose every complete line is true. Lines are written with a single
 * O_APPEND write; a torn last line (power loss) is skipped on reading.
 */
export function appendLedger(path: string, entry: LedgerEntry): void {
  const line = `${JSON.stringify(LedgerEntrySchema.parse(entry))}\n`;
  const fd = openSync(path, 'a');
  try {
    appendFileSync(fd, line);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface LedgerRead {
  entries: LedgerEntry[];
  /** The latest entry of each unit, by id. */
  latest: Map<string, LedgerEntry>;
  /** 1-based numbers of lines that were not valid entries (skipped). */
  badLines: number[];
}

/** Read a ledger, skipping lines that do not parse (say which); a missing file is empty. */
export function readLedger(path: string): LedgerRead {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const entries: LedgerEntry[] = [];
  const badLines: number[] = [];
  const latest = new Map<string, LedgerEntry>();
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      badLines.push(index + 1);
      return;
    }
    const parsed = LedgerEntrySchema.safeParse(json);
    if (!parsed.success) {
      badLines.push(index + 1);
      return;
    }
    entries.push(parsed.data);
    latest.set(parsed.data.id, parsed.data);
  });
  return { entries, latest, badLines };
}
