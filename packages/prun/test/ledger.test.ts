import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendLedger, readLedger, repairLedgerTail, syncLedger, type AppendIo, type LedgerEntry } from '../src/ledger.js';
import { fallbackReason } from '@prun/unit-state';
import { contractProblem, unitOutcome, type DispatchEnd } from '../src/outcome.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function ledgerPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'prun-ledger-'));
  dirs.push(dir);
  return join(dir, 'ledger.jsonl');
}

const entry: LedgerEntry = {
  id: 'a', status: 'queued', model: null, mode: null, prompt_file: '/p', clone_dir: null, result_file: '/r',
  state_dir: null, started_at: null, ended_at: null, exit_code: null,
};

describe('ledger', () => {
  it('fsyncs every append on the descriptor it wrote, before closing it', () => {
    const calls: string[] = [];
    const io: AppendIo = {
      openSync: (path, flags) => {
        const fd = fs.openSync(path, flags);
        calls.push(`open ${flags} ${fd}`);
        return fd;
      },
      writeSync: (fd, data) => {
        calls.push(`write ${fd}`);
        return fs.writeSync(fd, data);
      },
      fsyncSync: (fd) => {
        calls.push(`fsync ${fd}`);
        fs.fsyncSync(fd);
      },
      closeSync: (fd) => {
        calls.push(`close ${fd}`);
        fs.closeSync(fd);
      },
    };
    const path = ledgerPath();
    appendLedger(path, entry, io);
    appendLedger(path, { ...entry, status: 'done' }, io);
    const fd = calls[0]!.split(' ')[2];
    const fd2 = calls[4]!.split(' ')[2];
    expect(calls).toEqual([`open a ${fd}`, `write ${fd}`, `fsync ${fd}`, `close ${fd}`, `open a ${fd2}`, `write ${fd2}`, `fsync ${fd2}`, `close ${fd2}`]);
    expect(readLedger(path).entries).toHaveLength(2);
  });

  it('writes several entries with one write and one fsync; sync: false writes without fsync, and syncLedger fsyncs the file', () => {
    const calls: string[] = [];
    const io: AppendIo = {
      openSync: (path, flags) => fs.openSync(path, flags),
      writeSync: (fd, data) => {
        calls.push(`write ${String(data).split('\n').length - 1}`);
        return fs.writeSync(fd, data);
      },
      fsyncSync: (fd) => {
        calls.push('fsync');
        fs.fsyncSync(fd);
      },
      closeSync: (fd) => fs.closeSync(fd),
    };
    const path = ledgerPath();
    appendLedger(path, [entry, { ...entry, id: 'b' }, { ...entry, id: 'c' }], io);
    appendLedger(path, { ...entry, status: 'done' }, io, { sync: false });
    expect(calls).toEqual(['write 3', 'fsync', 'write 1']);
    syncLedger(path, io);
    expect(calls).toEqual(['write 3', 'fsync', 'write 1', 'fsync']);
    expect(readLedger(path).entries.map((e) => `${e.id} ${e.status}`)).toEqual(['a queued', 'b queued', 'c queued', 'a done']);
  });

  it('reads a torn last line as torn (not bad), sets it aside whole and cuts it, so the next line stands alone', () => {
    const path = ledgerPath();
    appendLedger(path, entry);
    appendLedger(path, { ...entry, status: 'running' });
    const whole = readFileSync(path);
    writeFileSync(path, '{"id":"a","stat', { flag: 'a' });
    const read = readLedger(path);
    expect(read.entries).toHaveLength(2);
    expect(read.badLines).toEqual([]);
    expect(read.tornTail?.line).toBe(3);
    const side = repairLedgerTail(path, read);
    expect(side).toBe(`${path}.torn-1`);
    expect(readFileSync(side!, 'utf8')).toBe('{"id":"a","stat');
    expect(readFileSync(path)).toEqual(whole);
    appendLedger(path, { ...entry, status: 'done' });
    const after = readLedger(path);
    expect(after.entries.map((e) => e.status)).toEqual(['queued', 'running', 'done']);
    expect(after.tornTail).toBeNull();
    // A second torn line later gets a side file of its own.
    writeFileSync(path, '{"id', { flag: 'a' });
    expect(repairLedgerTail(path, readLedger(path))).toBe(`${path}.torn-2`);
  });

  it('ends a whole last entry that only lacks its newline instead of setting it aside', () => {
    const path = ledgerPath();
    writeFileSync(path, JSON.stringify(entry));
    const read = readLedger(path);
    expect(read.entries).toHaveLength(1);
    expect(read.unterminated).toBe(true);
    expect(repairLedgerTail(path, read)).toBeNull();
    appendLedger(path, { ...entry, status: 'done' });
    expect(readLedger(path).entries.map((e) => e.status)).toEqual(['queued', 'done']);
  });

  it('reports a bad complete line by number', () => {
    const path = ledgerPath();
    appendLedger(path, entry);
    writeFileSync(path, 'not json\n', { flag: 'a' });
    appendLedger(path, { ...entry, status: 'done' });
    const read = readLedger(path);
    expect(read.badLines).toEqual([2]);
    expect(read.tornTail).toBeNull();
  });
});

const summary = (over: Partial<Exclude<DispatchEnd['result'], 'unparsed' | null>> = {}) => ({
  unitId: 'u1', fallback: false, conclusion: 'complete', files: 'none', openItems: 'none', verification: 'tests', ...over,
});
const end = (over: Partial<DispatchEnd>): DispatchEnd => ({ unitId: 'u1', exitCode: 0, result: summary(), stopSignal: null, stderrLast: null, ...over });

describe('unit outcome (one rule for the live and the restart path)', () => {
  it('is done for a result in the contract, whether the exit code is known or not', () => {
    expect(unitOutcome(end({}))).toEqual({ status: 'done' });
    expect(unitOutcome(end({ exitCode: null }))).toEqual({ status: 'done' });
    // The dispatcher finished before the batch's stop signal reached it.
    expect(unitOutcome(end({ stopSignal: 'SIGINT' }))).toEqual({ status: 'done' });
  });

  it('is invalid for a result that ignores the return contract', () => {
    expect(unitOutcome(end({ result: 'unparsed' }))).toMatchObject({ status: 'invalid', note: expect.stringContaining('# u1 result') });
    expect(unitOutcome(end({ result: summary({ files: null, verification: null }) }))).toMatchObject({
      status: 'invalid',
      note: 'result does not follow the return contract: it lacks Files:, Verification:',
    });
    expect(contractProblem('u1', summary({ unitId: 'u2' }))).toBe('its header names unit u2, not u1');
  });

  it('keeps a FALLBACK failed, defers a quota one, and calls one the batch stopped interrupted', () => {
    const fallback = summary({ fallback: true, conclusion: 'INCOMPLETE; Agy exited with code 3' });
    expect(unitOutcome(end({ exitCode: 3, result: fallback }))).toEqual({ status: 'failed', note: 'Agy exited with code 3' });
    expect(unitOutcome(end({ exitCode: null, result: fallback }))).toEqual({ status: 'failed', note: 'Agy exited with code 3' });
    const quota = summary({ fallback: true, conclusion: 'INCOMPLETE; the Agy Gemini quota group is exhausted (resets later).' });
    expect(unitOutcome(end({ exitCode: 75, result: quota })).status).toBe('deferred');
    expect(unitOutcome(end({ exitCode: null, result: quota })).status).toBe('deferred');
    const busy = summary({ fallback: true, conclusion: 'INCOMPLETE; another worker is still running in /c (its process tree holds the directory\'s lock); this one was not started' });
    expect(unitOutcome(end({ exitCode: 75, result: busy }))).toMatchObject({ status: 'deferred', refusal: 'busy' });
    // Settled after a restart (exit code unknown), the busy FALLBACK is deferred just the same.
    expect(unitOutcome(end({ exitCode: null, result: busy }))).toEqual(unitOutcome(end({ exitCode: 75, result: busy })));
    // Told by the dispatcher's own reader, never by the exit code alone: any other 75 is a failure.
    expect(unitOutcome(end({ exitCode: 75, result: fallback }))).toEqual({ status: 'failed', note: 'Agy exited with code 3' });
    const busyLine = `dispatch-task-agy: ${fallbackReason(busy)}`;
    expect(unitOutcome(end({ exitCode: 75, result: null, stderrLast: busyLine }))).toEqual({ status: 'deferred', note: fallbackReason(busy), refusal: 'busy' });
    expect(unitOutcome(end({ exitCode: 75, result: null, stderrLast: null }))).toMatchObject({ status: 'deferred', refusal: 'quota' });
    expect(unitOutcome(end({ exitCode: 75, result: quota }))).toMatchObject({ status: 'deferred', refusal: 'quota' });
    const stopped = summary({ fallback: true, conclusion: 'INCOMPLETE; dispatcher received SIGINT' });
    expect(unitOutcome(end({ exitCode: 130, result: stopped, stopSignal: 'SIGINT' })).status).toBe('interrupted');
    expect(unitOutcome(end({ exitCode: null, result: stopped, stopSignal: 'SIGINT' })).status).toBe('interrupted');
    expect(unitOutcome(end({ exitCode: 130, result: stopped })).status).toBe('failed');
  });

  it('queues again a dispatch that ended unwatched without any result, and fails a watched one with its reason', () => {
    expect(unitOutcome(end({ exitCode: null, result: null })).status).toBe('queued');
    expect(unitOutcome(end({ exitCode: 2, result: null, stderrLast: 'dispatch-task-agy: prompt file not found: /p' }))).toEqual({
      status: 'failed',
      note: 'dispatcher exited with code 2 and published no result: dispatch-task-agy: prompt file not found: /p',
    });
    expect(unitOutcome(end({ exitCode: 143, result: null, stopSignal: 'SIGTERM' })).status).toBe('interrupted');
  });

  it('trusts the exit code over a published result', () => {
    expect(unitOutcome(end({ exitCode: 70 }))).toEqual({ status: 'failed', note: 'dispatcher exited with code 70' });
    expect(unitOutcome(end({ exitCode: 143, stopSignal: 'SIGTERM' })).status).toBe('interrupted');
  });
});

describe('dispatcher identity', () => {
  it('names one process by pid, start time and --result-file, so a reused pid or another unit is never taken for it', async () => {
    const { spawn } = await import('node:child_process');
    const { isDispatcherFor, findDispatcherFor, processStartTime } = await import('../src/units.js');
    const dir = mkdtempSync(join(tmpdir(), 'prun-identity-'));
    dirs.push(dir);
    const script = join(dir, 'stand-in.mjs');
    writeFileSync(script, 'setTimeout(() => {}, 60_000);\n');
    const result = join(dir, 'results', 'w1.md');
    // The dispatcher's own spelling (`--opt=value`) and the older two-token one are both read.
    const child = spawn(process.execPath, [script, `--prompt-file=${join(dir, 'p.md')}`, `--result-file=${result}`, '--unit-id=w1'], { stdio: 'ignore' });
    const old = spawn(process.execPath, [script, '--prompt-file', join(dir, 'p.md'), '--result-file', `${result}.old`, '--unit-id', 'w1'], { stdio: 'ignore' });
    const spawned = Promise.all([child, old].map((p) => new Promise((resolveSpawn) => p.once('spawn', resolveSpawn))));
    try {
      await spawned;
      const start = processStartTime(child.pid!);
      expect(start).toMatch(/^\d+$/);
      expect(isDispatcherFor(child.pid!, result, start)).toBe(true);
      expect(isDispatcherFor(child.pid!, result, null)).toBe(true);
      // Same pid, another start time: a reused pid.
      expect(isDispatcherFor(child.pid!, result, String(Number(start) + 1))).toBe(false);
      // Another unit's result path.
      expect(isDispatcherFor(child.pid!, join(dir, 'results', 'w2.md'), start)).toBe(false);
      expect(isDispatcherFor(process.pid, result, null)).toBe(false);
      expect(findDispatcherFor(result)).toEqual({ pid: child.pid, start });
      expect(findDispatcherFor(`${result}.old`)?.pid).toBe(old.pid);
      // The batch directory reached through a symlink names the same dispatcher (no double dispatch).
      mkdirSync(join(dir, 'results'), { recursive: true });
      symlinkSync(dir, `${dir}-link`);
      dirs.push(`${dir}-link`);
      expect(isDispatcherFor(child.pid!, join(`${dir}-link`, 'results', 'w1.md'), start)).toBe(true);
      expect(findDispatcherFor(join(`${dir}-link`, 'results', 'w1.md'))).toEqual({ pid: child.pid, start });
      expect(isDispatcherFor(child.pid!, join(`${dir}-link`, 'results', 'w2.md'), start)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      old.kill('SIGKILL');
    }
  });
});
