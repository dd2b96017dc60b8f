import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, ftruncateSync, readdirSync, statSync, watch } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { BIN_PATH, baseEnv, it, makeUnit, runBin, tailPath, tempLeftovers } from './helpers.js';

const TAIL_BYTES = 256 * 1024 * 1024;

/** A unit whose tail is a sparse 256 MiB file: free to make, and far slower to snapshot than a signal. */
function sparseUnit(root: string, name: string): string {
  const unit = makeUnit(root, name, '');
  const fd = openSync(tailPath(unit), 'r+');
  ftruncateSync(fd, TAIL_BYTES);
  closeSync(fd);
  return unit;
}

/**
 * Start a snapshot into `dest` and stop it (SIGSTOP) as soon as its temporary archive appears,
 * so it is caught mid-copy whatever the machine's speed. Resolves with the process and the
 * temporary file's name.
 */
async function startAndFreeze(unit: string, dest: string): Promise<{ child: ChildProcess; part: string; exited: Promise<number | null> }> {
  const before = new Set(tempLeftovers(dest));
  const appeared = new Promise<string>((resolvePart) => {
    const watcher = watch(dest, () => {
      const part = tempLeftovers(dest).find((name) => !before.has(name));
      if (part !== undefined) {
        watcher.close();
        resolvePart(part);
      }
    });
  });
  const child = spawn(process.execPath, [BIN_PATH, '--unit', unit, '--dest', dest], { env: baseEnv(), stdio: 'ignore' });
  const exited = new Promise<number | null>((resolveExit) => child.on('close', (code) => resolveExit(code)));
  const part = await appeared;
  child.kill('SIGSTOP');
  return { child, part, exited };
}

// Heavy (two 256 MiB sources, real processes, signals): its tests run one at a time.
describe('temporary archives of killed runs', () => {
  it('removes the part a SIGKILLed run left, never the part of a live run beside it', async ({ root }) => {
    const dest = join(root, 'dest');
    expect((await runBin(['--unit', makeUnit(root, 'first', 'x'), '--dest', dest])).code).toBe(0);

    const killed = await startAndFreeze(sparseUnit(root, 'killed'), dest);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(tempLeftovers(dest)).toEqual([killed.part]);
    expect(killed.part).toMatch(new RegExp(`^\\.snap-part\\.snapshot-tail-${killed.child.pid}-[0-9a-f]{16}\\.tmp$`));

    const live = await startAndFreeze(sparseUnit(root, 'live'), dest);
    const liveInode = statSync(join(dest, live.part)).ino;
    try {
      const next = await runBin(['--unit', makeUnit(root, 'next', 'small'), '--dest', dest]);
      expect(next.code).toBe(0);
      // The killed run's part is gone; the live (stopped) run's part is exactly where it was.
      expect(tempLeftovers(dest)).toEqual([live.part]);
      expect(statSync(join(dest, live.part)).ino).toBe(liveInode);
    } finally {
      live.child.kill('SIGCONT');
    }
    // The live run carries on and publishes: its part was never touched.
    expect(await live.exited).toBe(0);
    expect(tempLeftovers(dest)).toEqual([]);
    expect(readdirSync(dest).filter((name) => name.endsWith('.zip'))).toHaveLength(3);
  }, 120_000);
});
