// The supervisor process's edge (supervise/main.ts): kit's runBin is its one catch, so a failure
// is one line in the supervisors' log and exit 70, with the stack only when PRUN_DEBUG asks; never
// Node's uncaught-exception trace and exit 1.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// What prun batch starts (the entry bundled into CommonJS by `pnpm build`), and tsc's own file.
const mains = {
  bundle: fileURLToPath(new URL('../dist/bundle-supervise-main.cjs', import.meta.url)),
  tsc: fileURLToPath(new URL('../dist/supervise/main.js', import.meta.url)),
};
const scratch = mkdtempSync(join(tmpdir(), 'prun-supervisor-edge-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// Started without its driver's socket on fd 3, as nothing but `prun batch` should start it.
function run(main: string, env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, [main], { cwd: scratch, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe.each(Object.entries(mains))('the supervisor entry (%s)', (_, main) => {
  it('an internal failure is one line and exit 70', () => {
    const { PRUN_DEBUG: _debug, ...env } = process.env;
    const result = run(main, env);
    expect(result.status).toBe(70);
    expect(result.stderr).toMatch(/^prun supervisor \d+: internal error: [^\n]+\n$/);
  });

  it('PRUN_DEBUG=1 adds the stack', () => {
    const result = run(main, { ...process.env, PRUN_DEBUG: '1' });
    expect(result.status).toBe(70);
    expect(result.stderr.split('\n')[1]).toMatch(/Error/);
  });
});
