import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, expect, test } from 'vitest';
import { tryFlock } from '@prun/kit/fs';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function lockFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kit-flock-'));
  dirs.push(dir);
  return join(dir, 'lock');
}

test('an exclusive lock stays held after the helper exits, and a second description is refused until it closes', () => {
  const path = lockFile();
  const first = openSync(path, 'a+');
  const second = openSync(path, 'a+');
  expect(tryFlock(first)).toBe('acquired');
  expect(tryFlock(second)).toBe('busy');
  expect(tryFlock(second, 'shared')).toBe('busy');
  closeSync(first);
  expect(tryFlock(second)).toBe('acquired');
  closeSync(second);
});

test('the lock dies with the process that owns the descriptor', async () => {
  const path = lockFile();
  // A holder process: takes the lock on its own descriptor and waits to be killed.
  const holder = spawn('sh', ['-c', 'exec 9>>"$1" && flock -x 9 && echo held && exec sleep 60', 'sh', path], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await once(holder.stdout!, 'data');
  const fd = openSync(path, 'a+');
  expect(tryFlock(fd)).toBe('busy');
  holder.kill('SIGKILL');
  await once(holder, 'exit');
  expect(tryFlock(fd)).toBe('acquired');
  closeSync(fd);
});
