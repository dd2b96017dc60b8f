import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe as baseDescribe, expect } from 'vitest';
import { broadModeProblem } from '../src/index.js';
import { it, makeUnit, runBin } from './helpers.js';

const describe = baseDescribe.concurrent;
const IS_ROOT = process.geteuid?.() === 0;

function broadDir(root: string, name: string, mode: number): string {
  const dir = join(root, name);
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

describe('advice for a destination others can reach', () => {
  it('never advises chmod on a shared sticky directory such as /tmp, and the advice it gives works', async ({ root }) => {
    const unit = makeUnit(root, 'sticky', 'data');
    const shared = broadDir(root, 'tmp-like', 0o1777);
    const run = await runBin(['--unit', unit, '--dest', shared]);
    expect(run.code).toBe(6);
    expect(run.stderr).toBe(
      `prun-snapshot-tail: error: ${shared} is group- or world-accessible (mode 1777); refusing to write snapshots there. ` +
        `It is a shared directory (sticky bit), so do not chmod it; use a new private directory inside it instead: --dest "$(mktemp -d ${shared}/snapshots.XXXXXX)"\n`,
    );
    expect(run.stderr).not.toContain('chmod 700');
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
    expect(readdirSync(shared)).toEqual([]);
    // The advised command, typed as shown, gives a destination that is accepted.
    const advised = spawnSync('sh', ['-c', `mktemp -d ${shared}/snapshots.XXXXXX`], { encoding: 'utf8' });
    const dest = advised.stdout.trim();
    expect((await runBin(['--unit', unit, '--dest', dest])).code).toBe(0);
  });

  it('gives that advice for /tmp itself (mode 1777, owned by root)', () => {
    expect(broadModeProblem('/tmp', 0o41777, false)).toContain('It is a shared directory (sticky bit), so do not chmod it');
    expect(broadModeProblem('/tmp', 0o41777, false)).not.toContain('chmod 700');
  });

  it('offers a private subdirectory for a plain group-writable directory, which then works', async ({ root }) => {
    const unit = makeUnit(root, 'group', 'data');
    const team = broadDir(root, 'team', 0o770);
    const run = await runBin(['--unit', unit, '--dest', team]);
    expect(run.code).toBe(6);
    expect(run.stderr).toBe(
      `prun-snapshot-tail: error: ${team} is group- or world-accessible (mode 0770); refusing to write snapshots there. ` +
        `If only you use it: chmod 700 ${team}; if your group shares it, pass a private subdirectory, which prun-snapshot-tail creates 0700: --dest ${team}/snapshots\n`,
    );
    expect(statSync(team).mode & 0o7777).toBe(0o770);
    const sub = join(team, 'snapshots');
    expect((await runBin(['--unit', unit, '--dest', sub])).code).toBe(0);
    expect(statSync(sub).mode & 0o777).toBe(0o700);
  });

  it('for a caller without --dest (lever "environment"), points at XDG_STATE_HOME and never at --dest', () => {
    for (const [mode, owned] of [[0o40777, true], [0o40777, false], [0o40770, true], [0o40770, false], [0o41777, false], [0o40750, false]] as const) {
      const message = broadModeProblem('/d', mode, owned, 'environment')!;
      expect(message, mode.toString(8)).not.toContain('--dest');
      expect(message, mode.toString(8)).toContain('set XDG_STATE_HOME to a private directory (snapshots then go in its anywhere-agents/prun/snapshots)');
    }
    // Only the caller's own directory nobody else can write to keeps the upstream chmod advice.
    expect(broadModeProblem('/d', 0o40750, true, 'environment')).toMatch(/Fix with: chmod 700 \/d$/);
  });

  it('sends a world-writable directory without the sticky bit elsewhere (anyone can rename entries there)', () => {
    const message = broadModeProblem('/shared', 0o40777)!;
    expect(message).toContain('If only you use it: chmod 700 /shared; if others share it, use a private directory elsewhere');
    expect(message).not.toContain('--dest /shared/');
  });

  it.skipIf(!IS_ROOT)('never advises chmod on a group-writable directory that belongs to someone else (needs root to chown; skipped otherwise)', async ({ root }) => {
    const unit = makeUnit(root, 'theirs', 'data');
    const theirs = broadDir(root, 'theirs', 0o770);
    chownSync(theirs, 65534, 65534);
    const run = await runBin(['--unit', unit, '--dest', theirs]);
    expect(run.code).toBe(6);
    expect(run.stderr).toContain(`It is not yours, so do not chmod it; pass a private subdirectory, which prun-snapshot-tail creates 0700: --dest ${theirs}/snapshots`);
    expect(run.stderr).not.toContain('chmod 700');
  });
});
