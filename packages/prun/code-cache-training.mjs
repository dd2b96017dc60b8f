// The workload `pnpm build` runs to train the code caches of prun's chunks (tools/bundle-bin.mjs
// --code-cache-train): what a batch's driver and its supervisor run for each unit, and a status,
// on instant fake-agy units (tools/fake-agy), as `pnpm bench 70-batch` runs them. Each bin runs
// with the trainer preloaded (PRUN_CODE_CACHE_TRAIN), which remakes the caches of the chunks it
// loaded as it exits. A unit's own outcome does not matter here (a machine without unshare runs
// it otherwise); a bin that cannot run at all fails the build.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const prun = join(here, 'bin', 'prun.js');
const trainer = process.env.PRUN_CODE_CACHE_TRAIN;
if (!trainer) throw new Error('code-cache-training.mjs: run by tools/bundle-bin.mjs --code-cache-train (PRUN_CODE_CACHE_TRAIN unset)');
const root = mkdtempSync(join(tmpdir(), 'prun-code-cache-training-'));
try {
  const env = {
    ...process.env,
    NODE_OPTIONS: `--require=${trainer}`,
    TMPDIR: root,
    ANTIGRAVITY_BIN: join(here, '..', '..', 'tools', 'fake-agy', 'fake-agy'),
    ANTIGRAVITY_PREFLIGHT: 'off',
    PRUN_AGY_QUOTA_GATE: 'off',
  };
  delete env.NODE_EXTRA_CA_CERTS;
  const plan = join(root, 'plan.json');
  writeFileSync(plan, JSON.stringify({ units: Array.from({ length: 6 }, (_, i) => ({ id: `u${i}`, prompt: `unit ${i}` })) }));
  const run = (args) => {
    const result = spawnSync(process.execPath, [prun, ...args], { env, cwd: root, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    // Exit 1 is a batch with a failed unit, still a run of every path but the unit's own.
    if (result.status !== 0 && result.status !== 1) throw new Error(`prun ${args.join(' ')}: ${result.stderr.trim() || `exit ${result.status ?? result.signal}`}`);
  };
  run(['batch', plan, '--dir', join(root, 'json'), '--jobs', '2', '--json']);
  run(['batch', plan, '--dir', join(root, 'table'), '--jobs', '2']);
  run(['status', join(root, 'table')]);
} finally {
  rmSync(root, { recursive: true, force: true });
}
