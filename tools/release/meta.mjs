#!/usr/bin/env node
// `pnpm meta` checks that every package's manifest is ready to publish; `pnpm meta --write`
// fixes what can be fixed mechanically. Checked, for each package in packages/:
//  - license, repository, homepage, bugs, engines and publishConfig equal what
//    tools/release/workspace.mjs derives from the root package.json (the one place the
//    repository address is set);
//  - workspace dependencies are written as `^<their current version>`, never `workspace:*`:
//    a manifest is then installable as it is, whoever packs it (`npm pack`, `pnpm pack`,
//    `npm publish`), and pnpm still links the local package (linkWorkspacePackages);
//    `changeset version` keeps the ranges current (updateInternalDependencies);
//  - `files` names only what runs (dist, bin, data the code reads) and covers every bin and
//    export;
//  - the package declares exactly the modules its built code imports (needs `pnpm build`),
//    and dist/ holds nothing an older build left behind;
//  - every third-party dependency is in the local registry's mirror (tools/registry/mirror);
//  - every changeset names workspace packages.
// `--write` stamps the metadata, rewrites `workspace:` ranges and renames the meta package's
// old name in changesets; the rest it reports.
// Exit 0 when all is well, 1 with one line per problem otherwise.
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expectedMetadata, readJson, root, workspacePackages } from './workspace.mjs';
import { mirroredVersions } from './mirror.mjs';
import { bundlesBins, isBundleOutput } from '../bundle-bin.mjs';

const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies'];
const NEVER_SHIPPED = /(^|\/)(src|test|tests|coverage)(\/|$)|tsconfig|vitest\.config|\.map$|\.tsbuildinfo$/u;
const builtins = new Set(builtinModules);

/** Bare module names imported by the JavaScript files under `dir` (type-only imports are gone after tsc). */
export function importedPackages(dir, { types = false } = {}) {
  const found = new Set();
  const walk = (path) => {
    if (!existsSync(path)) return;
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if ((types ? /\.d\.(m|c)?ts$/u : /\.(m?js|cjs)$/u).test(entry.name)) {
        const text = readFileSync(full, 'utf8');
        // Statement-level imports and re-exports as tsc emits them, bare side-effect imports,
        // dynamic import() with a literal specifier, and a synchronous load through
        // createRequire(import.meta.url)('name') (prun's plan loads yaml only for a YAML plan).
        const specifiers = [
          /^\s*(?:import|export)\s[^;'"]*?\bfrom\s*(['"])([^'"\n]+)\1/gmu,
          /\bimport\(\s*(['"])([^'"\n]+)\1\s*\)\.\w/gu,
          /^\s*import\s*(['"])([^'"\n]+)\1/gmu,
          /\bimport\(\s*(['"])([^'"\n]+)\1\s*\)/gu,
          /\bcreateRequire\([^()]*\)\(\s*(['"])([^'"\n]+)\1\s*\)/gu,
        ].flatMap((pattern) => [...text.matchAll(pattern)]);
        for (const [, , spec] of specifiers) {
          if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:') || spec.startsWith('#')) continue;
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
          if (!builtins.has(name)) found.add(name);
        }
      }
    }
  };
  walk(dir);
  return found;
}

const KEY_ORDER = ['name', 'version', 'description', 'license', 'type', 'repository', 'homepage', 'bugs', 'bin', 'exports', 'types', 'files', 'engines', 'scripts', 'dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies', 'publishConfig'];

/** The manifest with the usual keys in the usual order (others keep theirs, after them). */
function withKeyOrder(manifest) {
  const rank = (key) => (KEY_ORDER.includes(key) ? KEY_ORDER.indexOf(key) : KEY_ORDER.length);
  return Object.fromEntries(Object.entries(manifest).sort(([a], [b]) => rank(a) - rank(b)));
}

/** Files in dist/ that no file in src/ compiles to: a build does not delete them, a publish would ship them. */
export function staleOutputs(dir, manifest = {}) {
  // A bundled bin's files (tools/bundle-bin.mjs) have no source of their own, and each build writes them anew.
  const bundled = bundlesBins(manifest);
  const dist = join(dir, 'dist');
  const src = join(dir, 'src');
  if (!existsSync(dist) || !existsSync(src)) return [];
  const stale = [];
  const walk = (path, rel) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const relative = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(join(path, entry.name), relative);
      else {
        const stem = relative.replace(/(\.d)?\.(m|c)?(js|ts)$/u, '');
        const sources = ['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs'].map((ext) => join(src, `${stem}${ext}`));
        if (bundled && isBundleOutput(relative)) continue;
        if (!sources.some((source) => existsSync(source))) stale.push(`dist/${relative}`);
      }
    }
  };
  walk(dist, '');
  return stale;
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The problems of one package, and (with `fix`) the manifest with the mechanical ones fixed. */
export function checkPackage(pkg, versions, mirror) {
  const problems = [];
  const manifest = structuredClone(pkg.manifest);
  const name = manifest.name;
  const say = (text) => problems.push(`${relative(root, pkg.path)}: ${text}`);

  if (!/^@prun\/[a-z0-9-]+$/u.test(name)) say(`name ${name} is not an @prun/ scoped name`);
  if (manifest.private) say('is private: every package in packages/ is published');
  for (const [field, value] of Object.entries(expectedMetadata(pkg.folder))) {
    if (!sameJson(manifest[field], value)) {
      say(`${field} should be ${JSON.stringify(value)}`);
      manifest[field] = value;
    }
  }
  for (const field of DEPENDENCY_FIELDS) {
    for (const [dep, range] of Object.entries(manifest[field] ?? {})) {
      if (!versions.has(dep)) {
        if (String(range).startsWith('workspace:')) say(`${field}.${dep}: workspace: protocol for a package that is not in the workspace`);
        continue;
      }
      const wanted = `^${versions.get(dep)}`;
      if (range !== wanted) {
        say(`${field}.${dep} is ${range}, should be ${wanted} (the workspace version)`);
        manifest[field][dep] = wanted;
      }
    }
  }

  const files = manifest.files;
  if (!Array.isArray(files) || files.length === 0) say('files must list what the tarball holds');
  else {
    for (const entry of files) {
      if (NEVER_SHIPPED.test(entry)) say(`files entry ${entry} ships something that does not run`);
      if (!existsSync(join(pkg.dir, entry))) say(`files entry ${entry} does not exist (run pnpm build)`);
    }
    const targets = [
      ...Object.values(manifest.bin ?? {}),
      ...Object.values(manifest.exports ?? {}).flatMap((value) => (typeof value === 'string' ? [value] : Object.values(value))),
    ].map((target) => target.replace(/^\.\//u, ''));
    for (const target of targets) {
      if (target === 'package.json') continue;
      if (!files.some((entry) => target === entry || target.startsWith(`${entry.replace(/\/$/u, '')}/`))) {
        say(`${target} is a bin or export but not in files`);
      }
    }
  }

  for (const file of staleOutputs(pkg.dir, pkg.manifest)) {
    say(`${file} is left over from an older build (its source is gone): pnpm build removes it (each package's build clears its dist first)`);
  }
  if (existsSync(join(pkg.dir, 'dist'))) {
    const imported = importedPackages(join(pkg.dir, 'dist'));
    for (const dep of importedPackages(join(pkg.dir, 'bin'))) imported.add(dep);
    imported.delete(name);
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    for (const dep of imported) if (!declared.has(dep)) say(`imports ${dep} but does not declare it in dependencies`);
    // A dependency only the published type declarations name is still needed by a TypeScript user.
    const typed = importedPackages(join(pkg.dir, 'dist'), { types: true });
    for (const dep of Object.keys(manifest.dependencies ?? {})) {
      if (!imported.has(dep) && !typed.has(dep)) say(`declares ${dep} but its built code never imports it (move it to devDependencies if only tests use it)`);
    }
  } else {
    say('has no dist: run pnpm build before checking imports');
  }

  for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
    if (versions.has(dep)) continue;
    if (!mirror.get(dep)?.has(range)) {
      say(`dependency ${dep}@${range} is not in the local registry's mirror: run node tools/release/mirror.mjs --update`);
    }
  }
  return { problems, manifest: withKeyOrder(manifest) };
}

// The meta package's name before it was published: a changeset that still says "prun" is renamed.
const RENAMED = new Map([['prun', '@prun/cli']]);

/** Changesets must name workspace packages, or `changeset version` refuses the whole release. */
function checkChangesets(versions, write) {
  const dir = join(root, '.changeset');
  if (!existsSync(dir)) return [];
  const problems = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.md') && name !== 'README.md')) {
    const path = join(dir, file);
    let text = readFileSync(path, 'utf8');
    const front = /^---\n([\s\S]*?)\n---/u.exec(text)?.[1] ?? '';
    for (const [, name] of front.matchAll(/^\s*["']?([^"':\n]+)["']?\s*:/gmu)) {
      if (versions.has(name)) continue;
      if (write && RENAMED.has(name)) {
        text = text.replace(new RegExp(`^(\\s*)["']?${name}["']?(\\s*:)`, 'mu'), `$1"${RENAMED.get(name)}"$2`);
        writeFileSync(path, text);
      } else {
        problems.push(`.changeset/${file}: names ${name}, which is not a workspace package${RENAMED.has(name) ? ` (it is ${RENAMED.get(name)} now; --write fixes it)` : ''}`);
      }
    }
  }
  return problems;
}

// The meta package's npm name is @prun/cli (`prun` on npm is someone else's); a doc that calls
// the package `prun` sends a reader to `npm i prun`. The bin and command stay `prun`.
const BARE_META_NAME = [
  /(?<!bin )`prun`,? at the (top|bottom)/u,
  /(meta|front-door) package,? `prun`/u,
  /`prun` (meta )?package/u,
  /npm i(nstall)? (-g )?prun(\s|$)/u,
];

/** Lines of docs that name the meta package `prun` rather than `@prun/cli`: `file:line: text`. */
export function bareMetaNames(files) {
  return files.flatMap(([file, text]) =>
    text.split('\n').flatMap((line, index, lines) => {
      // A phrase may wrap: look at each line joined with the next.
      const joined = `${line} ${lines[index + 1] ?? ''}`;
      return BARE_META_NAME.some((pattern) => pattern.test(joined) && !pattern.test(lines[index + 1] ?? '')) ? [`${file}:${index + 1}: ${line.trim()}`] : [];
    }),
  );
}

/** The repository's own documents: README.md, RELEASING.md, docs/*.md, every package README. */
function docFiles() {
  const files = ['README.md', 'RELEASING.md'];
  // A release tree (tools/release/check.mjs) holds no docs/: check what is there.
  const docs = join(root, 'docs');
  for (const entry of existsSync(docs) ? readdirSync(docs) : []) if (entry.endsWith('.md')) files.push(`docs/${entry}`);
  for (const pkg of workspacePackages()) files.push(`packages/${pkg.folder}/README.md`);
  return files.filter((file) => existsSync(join(root, file))).map((file) => [file, readFileSync(join(root, file), 'utf8')]);
}

export function checkWorkspace({ write = false } = {}) {
  const packages = workspacePackages();
  const versions = new Map(packages.map((pkg) => [pkg.manifest.name, pkg.manifest.version]));
  const mirror = mirroredVersions();
  const problems = checkChangesets(versions, write);
  for (const line of bareMetaNames(docFiles())) problems.push(`${line}: the meta package is @prun/cli (its bin is prun)`);
  for (const pkg of packages) {
    const result = checkPackage(pkg, versions, mirror);
    if (write && !sameJson(result.manifest, pkg.manifest)) {
      writeFileSync(pkg.path, `${JSON.stringify(result.manifest, null, 2)}\n`);
      // Report only what --write could not fix.
      problems.push(...checkPackage({ ...pkg, manifest: readJson(pkg.path) }, versions, mirror).problems);
    } else {
      problems.push(...result.problems);
    }
  }
  return problems;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const unknown = args.filter((arg) => arg !== '--write');
  if (unknown.length > 0) {
    process.stderr.write(`meta: unknown argument ${unknown[0]} (usage: node tools/release/meta.mjs [--write])\n`);
    process.exit(2);
  }
  const problems = checkWorkspace({ write: args.includes('--write') });
  for (const problem of problems) process.stdout.write(`${problem}\n`);
  process.stdout.write(problems.length === 0 ? 'meta: every package is ready to publish\n' : `meta: ${problems.length} problem(s)\n`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
