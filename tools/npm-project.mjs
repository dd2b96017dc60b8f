// Installs a folder that is its own npm project (not a pnpm workspace member) with `npm ci`
// from its committed package-lock.json. Shared by tools/pi and tools/registry, which hold
// pinned tools the tests drive for real. A stamp of package.json and the lockfile makes a
// repeat run a no-op instead of a reinstall.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npm ci` in `dir` unless the stamp says it is done and every `required` file exists.
 * Returns true on success; on failure prints one line naming `label` and returns false.
 */
export function installNpmProject({ dir, required, label }) {
  const stampFile = join(dir, 'node_modules', '.prun-install-stamp');
  const stamp = createHash('sha256')
    .update(readFileSync(join(dir, 'package.json')))
    .update(readFileSync(join(dir, 'package-lock.json')))
    .digest('hex');
  const installed =
    existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp && required.every((file) => existsSync(file));
  if (installed) return true;
  // Node 20 runs npm here while some pins want Node 22: engine checks must stay warnings.
  // No package in these trees needs an install script.
  const args = ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false', '--ignore-scripts'];
  const npm = spawnSync('npm', args, { cwd: dir, stdio: 'inherit' });
  if (npm.error || npm.status !== 0) {
    const why = npm.error ? npm.error.message : `exit ${npm.status ?? npm.signal}`;
    console.error(`${label}: npm ci failed (${why})`);
    return false;
  }
  if (!required.every((file) => existsSync(file))) {
    console.error(`${label}: npm ci finished but ${required.find((file) => !existsSync(file))} is missing`);
    return false;
  }
  writeFileSync(stampFile, `${stamp}\n`);
  return true;
}
