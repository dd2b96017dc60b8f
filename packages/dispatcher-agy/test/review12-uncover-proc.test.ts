/**
 * review12 (issue 12 review): an isolated worker must not be able to uncover the host's /proc.
 * The namespace's fresh /proc is mounted over the host's; a worker that may unmount it (root
 * with CAP_SYS_ADMIN, as the launch chain runs it when the dispatcher runs as root) sees every
 * process again and reads the dispatcher's unscrubbed environment. This test is a hostile
 * worker that tries exactly that, then hands over to fake-agy so the dispatch ends normally.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { planLaunch } from '../src/isolation.js';
import { FAKE_AGY, rootPool } from './harness.js';

const pool = rootPool();
afterAll(() => pool.cleanup());

const plan = planLaunch('auto', process.platform, process.getuid?.() === 0);
const noNamespace = plan.isolation.kind === 'pid' ? null : plan.isolation.reason;
const SECRET = `uncover-${Math.random().toString(36).slice(2)}-secret`;

test.skipIf(noNamespace !== null)(
  `an isolated worker cannot unmount its /proc to read the dispatcher's environment${noNamespace ? ` (skipped: ${noNamespace})` : ''}`,
  async () => {
    const root = pool.root();
    const report = join(root.dir, 'uncover.txt');
    const agy = join(root.dir, 'agy-uncover');
    writeFileSync(
      agy,
      [
        '#!/bin/sh',
        `case "$*" in --version|models|*/usage*) exec "${FAKE_AGY}" "$@";; esac`,
        `{ umount -l /proc && echo "umount: ok"; ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/environ; } > "${report}" 2>&1`,
        `exec "${FAKE_AGY}" "$@"`,
        '',
      ].join('\n'),
    );
    chmodSync(agy, 0o755);
    const run = await root.run({ env: { PRUN_ISOLATE: 'pid', ANTIGRAVITY_BIN: agy, MY_API_KEY: SECRET } });
    expect(run.code).toBe(0);
    expect(existsSync(report)).toBe(true);
    const text = readFileSync(report, 'utf8');
    expect(text.includes(SECRET) ? 'the dispatcher environment leaked' : 'no leak').toBe('no leak');
    expect(text).not.toContain('umount: ok');
  },
);
