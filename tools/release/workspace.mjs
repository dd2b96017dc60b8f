// The workspace as the release tools see it: every package's folder and manifest, the order
// they must be published in, and the metadata every published manifest carries. The one
// place the repository's address is set is the root package.json's `repository.url`
// (a GitHub https URL); every package's repository, homepage and bugs fields derive from it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

export function readJson(path) {
  return JSON.parse(readFileSync(path, 'utf8'));
}

export const rootManifest = readJson(join(root, 'package.json'));

/** Every workspace package under `base` (this checkout by default): `{ folder, dir, path, manifest }`, in folder order. */
export function workspacePackages(base = root) {
  return readdirSync(join(base, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(base, 'packages', entry.name, 'package.json')))
    .map((entry) => {
      const dir = join(base, 'packages', entry.name);
      const path = join(dir, 'package.json');
      return { folder: entry.name, dir, path, manifest: readJson(path) };
    });
}

/** The names of a package's dependencies that are workspace packages. */
export function internalDependencies(manifest, names) {
  return Object.keys(manifest.dependencies ?? {}).filter((dep) => names.has(dep));
}

/** Packages ordered so that each comes after every workspace package it depends on. */
export function dependencyOrder(packages) {
  const names = new Set(packages.map((pkg) => pkg.manifest.name));
  const byName = new Map(packages.map((pkg) => [pkg.manifest.name, pkg]));
  const ordered = [];
  const state = new Map();
  const visit = (name, path) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`dependency cycle: ${[...path, name].join(' -> ')}`);
    state.set(name, 'visiting');
    for (const dep of internalDependencies(byName.get(name).manifest, names).sort()) visit(dep, [...path, name]);
    state.set(name, 'done');
    ordered.push(byName.get(name));
  };
  for (const pkg of packages) visit(pkg.manifest.name, []);
  return ordered;
}

/** `owner/name` of the GitHub repository named by the root manifest's repository.url. */
export function repositorySlug(manifest = rootManifest) {
  const url = typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
  const match = /^(?:git\+)?https:\/\/github\.com\/([A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+?)(?:\.git)?$/u.exec(url ?? '');
  if (!match) throw new Error(`root package.json repository.url must be https://github.com/OWNER/NAME.git, got ${url}`);
  return match[1];
}

/** The fields every published package carries, derived from the root manifest. */
export function expectedMetadata(folder, manifest = rootManifest) {
  const slug = repositorySlug(manifest);
  return {
    license: manifest.license,
    repository: { type: 'git', url: `git+https://github.com/${slug}.git`, directory: `packages/${folder}` },
    homepage: `https://github.com/${slug}/tree/main/packages/${folder}#readme`,
    bugs: { url: `https://github.com/${slug}/issues` },
    engines: manifest.engines,
    publishConfig: { access: 'public' },
  };
}
