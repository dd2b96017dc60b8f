import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { BIN_PATH, baseEnv, it, makeUnit, readArchive, runBin, sha256, tailPath, tempLeftovers, waitFor, type JsonOutcome } from './helpers.js';

// These runs are heavy (10 processes, a live writer, a large copy), so this file runs its tests
// one at a time.
describe('publication under stress', () => {
  it('lets exactly one of 10 racing runs publish one --output name; the rest exit 3', async ({ root }) => {
    const unit = makeUnit(root, 'race', Buffer.alloc(2 * 1024 * 1024, 'payload'));
    const dest = join(root, 'race-dest');
    const output = join(dest, 'one.zip');
    const runs = await Promise.all(Array.from({ length: 10 }, () => runBin(['--unit', unit, '--output', output])));
    const codes = runs.map((run) => run.code).sort();
    expect(codes).toEqual([0, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
    const back = await readArchive(output);
    expect(back.names).toEqual(['tail.bin', 'manifest.json']);
    expect(back.members.get('tail.bin')!.equals(readFileSync(tailPath(unit)))).toBe(true);
    expect(readdirSync(dest)).toEqual(['one.zip']);
  });

  it('cuts a tail that grows during the snapshot at its size at open', async ({ root }) => {
    const initial = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < initial.length; i += 4096) initial.writeUInt32BE(i / 4096, i);
    const unit = makeUnit(root, 'grow', initial);
    const source = tailPath(unit);
    const writerCode = `
      const fs = require('fs');
      const fd = fs.openSync(process.argv[1], 'a');
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (let n = 0; ; n++) { fs.writeSync(fd, Buffer.alloc(16384, n % 251)); Atomics.wait(pause, 0, 0, 2); }`;
    const writer = spawn(process.execPath, ['-e', writerCode, source], { stdio: 'ignore' });
    try {
      await waitFor(() => statSync(source).size > initial.length + 64 * 1024);
      const run = await runBin(['--unit', unit, '--output', join(root, 'd', 'grow.zip'), '--json']);
      expect(run.code).toBe(0);
      const { manifest } = JSON.parse(run.stdout) as JsonOutcome;
      await waitFor(() => statSync(source).size > manifest.source_size_at_open);
      writer.kill('SIGKILL');
      const tail = (await readArchive(join(root, 'd', 'grow.zip'))).members.get('tail.bin')!;
      expect(manifest.source_size_at_open).toBeGreaterThan(initial.length);
      expect(manifest.bytes_copied).toBe(manifest.source_size_at_open);
      expect(manifest.capture_outcome).toBe('complete_bounded_read');
      expect(tail.length).toBe(manifest.source_size_at_open);
      expect(tail.equals(readFileSync(source).subarray(0, tail.length))).toBe(true);
      expect(sha256(tail)).toBe(manifest.sha256);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it('removes its temporary archive when killed by a signal mid-copy', async ({ root }) => {
    const unit = makeUnit(root, 'sig', Buffer.alloc(128 * 1024 * 1024, 1));
    const dest = join(root, 'sig-dest');
    const child = spawn(process.execPath, [BIN_PATH, '--unit', unit, '--dest', dest], {
      env: baseEnv(),
      stdio: 'ignore',
    });
    const exited = new Promise<NodeJS.Signals | null>((resolveExit) => child.on('close', (_code, signal) => resolveExit(signal)));
    let sawTemp = false;
    await waitFor(() => (sawTemp = tempLeftovers(dest).length > 0) || child.exitCode !== null, 15_000);
    child.kill('SIGTERM');
    const signal = await exited;
    if (sawTemp && signal === 'SIGTERM') {
      expect(tempLeftovers(dest)).toEqual([]);
      expect(readdirSync(dest)).toEqual([]);
    } else {
      // The copy finished before the signal landed; nothing to prove about cleanup then.
      expect(readdirSync(dest).filter((name) => name.endsWith('.zip'))).toHaveLength(1);
    }
    rmSync(tailPath(unit));
  });
});
