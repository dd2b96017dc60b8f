#!/usr/bin/env node
// `pnpm release:check`: what a user gets from the registry, tried before a release. Packs every
// package with `pnpm pack` (which turns `workspace:*` into real versions), then installs each
// package alone into its own temporary prefix with `npm i -g`, together with only the tarballs
// of its workspace dependencies, and runs each of its bins with `--help` (a library-only
// package is imported instead). Run `pnpm build` first. Exit 0 when every package passes.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'prun-release-check-'));
const tarballs = join(work, 'tarballs');
const only = process.argv.slice(2);

const packages = readdirSync(join(root, 'packages')).map((folder) => {
  const manifest = JSON.parse(readFileSync(join(root, 'packages', folder, 'package.json'), 'utf8'));
  return { folder, manifest };
});
const byName = new Map(packages.map((pkg) => [pkg.manifest.name, pkg]));

function workspaceDeps(name, seen = new Set()) {
  for (const [dep, range] of Object.entries(byName.get(name).manifest.dependencies ?? {})) {
    if (String(range).startsWith('workspace:') && !seen.has(dep)) {
      seen.add(dep);
      workspaceDeps(dep, seen);
    }
  }
  return seen;
}

let failures = 0;
try {
  const tarballOf = new Map();
  for (const pkg of packages) {
    const out = execFileSync('pnpm', ['pack', '--pack-destination', tarballs], { cwd: join(root, 'packages', pkg.folder), encoding: 'utf8' });
    const file = out.trim().split('\n').filter((line) => line.endsWith('.tgz')).at(-1);
    tarballOf.set(pkg.manifest.name, file.startsWith('/') ? file : join(tarballs, file));
  }
  for (const pkg of packages) {
    const name = pkg.manifest.name;
    if (only.length > 0 && !only.some((word) => name.includes(word))) continue;
    const prefix = join(work, `prefix-${pkg.folder}`);
    const install = [tarballOf.get(name), ...[...workspaceDeps(name)].map((dep) => tarballOf.get(dep))];
    const npm = spawnSync('npm', ['i', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', ...install], { encoding: 'utf8' });
    if (npm.status !== 0) {
      failures += 1;
      process.stdout.write(`FAIL ${name}: npm i -g failed\n${npm.stderr}\n`);
      continue;
    }
    const bins = Object.keys(pkg.manifest.bin ?? {});
    const checks = bins.length > 0
      ? bins.map((bin) => [join(prefix, 'bin', bin), ['--help']])
      : [[process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(name)})`]]];
    for (const [command, args] of checks) {
      // From <prefix>/lib, `import(name)` resolves through <prefix>/lib/node_modules as a user's would.
      const run = spawnSync(command, args, { encoding: 'utf8', cwd: join(prefix, 'lib') });
      const label = bins.length > 0 ? `${command.split('/').at(-1)} --help` : `import ${name}`;
      if (run.status === 0) {
        process.stdout.write(`ok   ${name}: ${label}\n`);
      } else {
        failures += 1;
        process.stdout.write(`FAIL ${name}: ${label} exited ${run.status}\n${run.stderr}\n`);
      }
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.stdout.write(failures === 0 ? 'release check: every package installs alone and runs\n' : `release check: ${failures} failure(s)\n`);
process.exitCode = failures === 0 ? 0 : 1;
