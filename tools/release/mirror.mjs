#!/usr/bin/env node
// The third-party packages our packages depend on, mirrored so that the local registry of
// the release round trip can serve them without reaching beyond 127.0.0.1.
//
// tools/registry/mirror/package.json lists every third-party runtime dependency of every
// package (exact pins, as the packages declare them); its package-lock.json pins the whole
// closure. Set-up (`node tools/registry/install.mjs`, run by the root postinstall) downloads
// each locked tarball into tools/registry/mirror/tarballs/ and checks it against the lock's
// integrity; the round trip publishes them into its registry before ours.
//
//   node tools/release/mirror.mjs --update   rewrite package.json from the packages, relock (network)
//   node tools/release/mirror.mjs --fetch    download the locked tarballs (network; what set-up runs)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readJson, root, workspacePackages } from './workspace.mjs';

export const mirrorDir = join(root, 'tools', 'registry', 'mirror');
export const tarballDir = join(mirrorDir, 'tarballs');

/** name -> set of ranges the mirror's package.json holds (what the meta check compares with). */
export function mirroredVersions() {
  const path = join(mirrorDir, 'package.json');
  const deps = existsSync(path) ? (readJson(path).dependencies ?? {}) : {};
  return new Map(Object.entries(deps).map(([name, range]) => [name, new Set([range])]));
}

/** Every package of the locked closure: `{ name, version, resolved, integrity }`. */
export function lockedPackages() {
  const lock = readJson(join(mirrorDir, 'package-lock.json'));
  return Object.entries(lock.packages)
    .filter(([path]) => path.includes('node_modules/'))
    .map(([path, entry]) => ({ name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), ...entry }));
}

/** The file name `npm pack` gives a package's tarball. */
export function tarballName({ name, version }) {
  return `${name.replace(/^@/u, '').replace('/', '-')}-${version}.tgz`;
}

function integrityOf(path) {
  return `sha512-${createHash('sha512').update(readFileSync(path)).digest('base64')}`;
}

/** Downloads (through npm, so the user's registry and proxy settings apply) what is missing. */
export function fetchTarballs() {
  mkdirSync(tarballDir, { recursive: true });
  const locked = lockedPackages();
  const missing = locked.filter((pkg) => {
    const file = join(tarballDir, tarballName(pkg));
    return !existsSync(file) || integrityOf(file) !== pkg.integrity;
  });
  if (missing.length > 0) {
    const specs = missing.map((pkg) => `${pkg.name}@${pkg.version}`);
    const npm = spawnSync('npm', ['pack', '--loglevel=error', '--pack-destination', tarballDir, ...specs], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (npm.status !== 0) throw new Error(`npm pack of the mirror's tarballs failed (exit ${npm.status ?? npm.signal})`);
  }
  for (const pkg of locked) {
    const file = join(tarballDir, tarballName(pkg));
    if (!existsSync(file)) throw new Error(`mirror: ${pkg.name}@${pkg.version} was not downloaded`);
    if (integrityOf(file) !== pkg.integrity) throw new Error(`mirror: ${tarballName(pkg)} does not match the lock's integrity`);
  }
  return locked.length;
}

/** Rewrites the mirror's package.json from the packages' third-party dependencies and relocks. */
export function updateMirror() {
  const packages = workspacePackages();
  const ours = new Set(packages.map((pkg) => pkg.manifest.name));
  const wanted = {};
  for (const pkg of packages) {
    for (const [dep, range] of Object.entries(pkg.manifest.dependencies ?? {})) {
      if (ours.has(dep)) continue;
      if (wanted[dep] !== undefined && wanted[dep] !== range) {
        throw new Error(`${dep} is wanted as ${wanted[dep]} and as ${range}: pin one version across packages`);
      }
      wanted[dep] = range;
    }
  }
  const manifest = {
    name: 'prun-registry-mirror',
    private: true,
    description: 'The third-party closure of every prun package, for the local registry of the release round trip. Written by tools/release/mirror.mjs --update.',
    license: 'UNLICENSED',
    dependencies: Object.fromEntries(Object.entries(wanted).sort(([a], [b]) => a.localeCompare(b))),
  };
  writeFileSync(join(mirrorDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const npm = spawnSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--engine-strict=false', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: mirrorDir,
    stdio: 'inherit',
  });
  if (npm.status !== 0) throw new Error('npm install --package-lock-only failed');
}

/** The manifest (package.json) inside a package tarball: the one file at depth one named package.json. */
export function manifestOfTarball(buffer) {
  const tar = gunzipSync(buffer);
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (start, length) => header.subarray(start, start + length).toString('utf8').replace(/\0.*$/su, '');
    const name = `${field(345, 155) ? `${field(345, 155)}/` : ''}${field(0, 100)}`;
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    if ((type === '0' || type === '') && /^[^/]+\/package\.json$/u.test(name)) {
      return JSON.parse(tar.subarray(offset + 512, offset + 512 + size).toString('utf8'));
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error('no package.json in the tarball');
}

/**
 * Publishes every mirrored tarball into the registry at `url`, as `npm publish` would send it
 * (one PUT of the packument with the tarball attached; the registry takes anonymous publishes).
 * In-process, because 29 npm start-ups cost minutes on a loaded machine.
 */
export async function publishMirror(url) {
  const base = url.endsWith('/') ? url : `${url}/`;
  const locked = lockedPackages();
  for (const pkg of locked) {
    const data = readFileSync(join(tarballDir, tarballName(pkg)));
    const manifest = manifestOfTarball(data);
    const file = `${pkg.name}-${pkg.version}.tgz`;
    const version = {
      ...manifest,
      _id: `${pkg.name}@${pkg.version}`,
      dist: {
        integrity: pkg.integrity,
        shasum: createHash('sha1').update(data).digest('hex'),
        tarball: `${base}${pkg.name}/-/${file.replace(/^@[^/]+\//u, '')}`,
      },
    };
    const body = {
      _id: pkg.name,
      name: pkg.name,
      'dist-tags': { latest: pkg.version },
      versions: { [pkg.version]: version },
      _attachments: { [file]: { content_type: 'application/octet-stream', data: data.toString('base64'), length: data.length } },
    };
    const response = await fetch(`${base}${pkg.name.replace('/', '%2f')}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`publishing mirrored ${file} failed: ${response.status} ${await response.text()}`);
  }
  return locked.length;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [mode] = process.argv.slice(2);
  try {
    if (mode === '--update') {
      updateMirror();
      process.stdout.write(`mirror: ${fetchTarballs()} tarballs locked and fetched\n`);
    } else if (mode === '--fetch') {
      process.stdout.write(`mirror: ${fetchTarballs()} tarballs present\n`);
    } else {
      process.stderr.write('usage: node tools/release/mirror.mjs --update | --fetch\n');
      process.exitCode = 2;
    }
  } catch (error) {
    process.stderr.write(`mirror: ${error.message}\n`);
    process.exitCode = 1;
  }
}
