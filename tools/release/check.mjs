#!/usr/bin/env node
// `pnpm release:check`: the release, end to end, against a real local npm registry.
//
//  1. `pnpm meta`: every manifest is ready to publish.
//  2. A release tree in a temporary directory: the root manifests, .changeset/, the release
//     tools, and each package's manifest, README and `files` (built output), as a clean
//     clone would hold them after `pnpm build`. One extra changeset bumps @prun/unit-state,
//     so `pnpm release:version` always has something to do; its result is checked (every
//     dependent's range follows the new version, the versioned tree installs with
//     `pnpm install --frozen-lockfile`). A copy with that one changeset alone must move only
//     unit-state and its dependents (versions are independent).
//  3. verdaccio (tools/registry, pinned) on 127.0.0.1 at a free port, its storage in the
//     temporary directory, anonymous publish, no uplinks; the mirrored third-party tarballs
//     (tools/registry/mirror) are published into it first.
//  4. `pnpm release --dry-run` publishes nothing; `pnpm release` publishes every package in
//     dependency order; a second `pnpm release` finds nothing to do.
//  5. Each published tarball holds only its `files` (plus package.json, README, LICENSE).
//  6. Each package alone: `npm i -g NAME` into a fresh prefix from the local registry; the
//     installed tree is exactly the closure of its declared dependencies; its bins answer
//     --help (a library is imported). Real runs: prun-monitor over a state dir made by the
//     dispatcher with tools/fake-agy; prun-snapshot-tail over it; prun-job against the real
//     pi and tools/fake-llm; prun batch.
//  7. `npm pack` of every package gives a tarball that plain `npm i` installs from the
//     registry, holding the same files as the published one.
//  8. docs/user-guide.md, every command, from a scratch directory (tools/release/guide.mjs).
// Prints each package's tarball and installed size; `--update-readme` writes the install
// sizes into README.md's package table. Exit 0 when everything passed, 1 otherwise.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { checkWorkspace } from './meta.mjs';
import { lockedPackages, publishMirror } from './mirror.mjs';
import { runGuide } from './guide.mjs';
import { selfTest } from './self-test.mjs';
import { sizeDrift, updateReadmeSizes } from './sizes.mjs';
import { dependencyOrder, readJson, root, workspacePackages } from './workspace.mjs';
import { makePiEnv, startFakeLlm } from '../fake-llm/harness.mjs';

const args = process.argv.slice(2);
const updateReadme = args.includes('--update-readme');
const keep = args.includes('--keep');
const unknown = args.filter((arg) => !['--update-readme', '--keep'].includes(arg));
if (unknown.length > 0) {
  process.stderr.write(`release:check: unknown argument ${unknown[0]} (usage: pnpm release:check [--update-readme] [--keep])\n`);
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'prun-release-check-'));
// Every bin this check starts gets a HOME of its own: the dispatcher and prun-quota refresh
// $HOME/.claude/agy-quota-cache.json, and tools/fake-agy's payload must never land in the real one.
const ownHome = { ...process.env, HOME: join(work, 'home'), AGY_QUOTA_CACHE: join(work, 'home', 'no-quota-snapshot.json') };
mkdirSync(ownHome.HOME, { recursive: true });
const fakeAgy = join(root, 'tools', 'fake-agy', 'fake-agy');
let failures = 0;
const children = [];

// Install sizes shift by a few kB between runs (npm's lock and bookkeeping files); more than
// this is a real change the README's table must show.
const SIZE_TOLERANCE = 0.1;
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s`;
function ok(text) {
  process.stdout.write(`ok   ${elapsed()} ${text}\n`);
}
function fail(text, detail = '') {
  failures += 1;
  process.stdout.write(`FAIL ${elapsed()} ${text}\n${detail ? `${detail.trimEnd().replace(/^/gmu, '     ')}\n` : ''}`);
}
function check(condition, text, detail) {
  if (condition) ok(text);
  else fail(text, detail);
  return condition;
}

/** npm and pnpm see only this run's registry, cache and config, never the user's. */
function clientEnv(registry, extra = {}) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (/^npm_/iu.test(key)) delete env[key];
  return {
    ...env,
    npm_config_registry: registry,
    npm_config_userconfig: join(work, 'npmrc'),
    npm_config_cache: join(work, 'npm-cache'),
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    npm_config_loglevel: 'error',
    ...extra,
  };
}

function runSync(command, argv, options = {}) {
  return spawnSync(command, argv, { encoding: 'utf8', ...options });
}

/** Runs a command to its end; resolves `{ code, stdout, stderr }`. */
function run(command, argv, options = {}) {
  return new Promise((done) => {
    const child = spawn(command, argv, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) => done({ code: 127, stdout, stderr: `${stderr}${error.message}` }));
    child.on('close', (code, signal) => done({ code: code ?? 128, signal, stdout, stderr }));
  });
}

/** Runs jobs at most `limit` at a time, in order of the list. */
async function inParallel(items, limit, job) {
  const queue = [...items.entries()];
  const results = [];
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) results[next[0]] = await job(next[1]);
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/** Sum of the sizes of every file under `dir` (what the install costs on disk). */
function treeBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(full);
    else if (entry.isFile()) total += lstatSync(full).size;
  }
  return total;
}

export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** name@version of every package installed under a node_modules tree. */
function installedPackages(nodeModules, found = new Set()) {
  if (!existsSync(nodeModules)) return found;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((sub) => join(nodeModules, entry, sub)) : [join(nodeModules, entry)];
    for (const dir of dirs) {
      const manifest = join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      found.add(readJson(manifest).name);
      installedPackages(join(dir, 'node_modules'), found);
    }
  }
  return found;
}

/** The names a package's install must bring: itself, our dependencies, and the third-party closure. */
function expectedClosure(name, manifests, thirdParty) {
  const seen = new Set();
  const visit = (dep) => {
    if (seen.has(dep)) return;
    seen.add(dep);
    const deps = manifests.get(dep)?.dependencies ?? thirdParty.get(dep) ?? {};
    for (const next of Object.keys(deps)) visit(next);
  };
  visit(name);
  return seen;
}

/** Starts verdaccio and resolves its URL once it prints LISTENING (an event, not a sleep). */
function startRegistry(dir) {
  return new Promise((resolveUrl, reject) => {
    const child = spawn(process.execPath, [join(root, 'tools', 'registry', 'serve.mjs'), dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => reject(new Error(`verdaccio exited (${code}) before listening:\n${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const match = /^LISTENING (\S+)$/u.exec(line);
      if (match) resolveUrl(match[1]);
    });
  });
}

/** The release tree: what a clean clone holds after set-up and build, without node_modules. */
function stageReleaseTree(tree) {
  for (const file of ['package.json', 'pnpm-workspace.yaml', 'pnpm-lock.yaml', 'nx.json', 'README.md']) cpSync(join(root, file), join(tree, file));
  cpSync(join(root, '.changeset'), join(tree, '.changeset'), { recursive: true });
  cpSync(join(root, 'tools', 'release'), join(tree, 'tools', 'release'), { recursive: true });
  // meta.mjs knows a bundled bin's files by the bundler's own rule (rolldown loads only when it bundles).
  cpSync(join(root, 'tools', 'bundle-bin.mjs'), join(tree, 'tools', 'bundle-bin.mjs'));
  for (const file of ['package.json', 'package-lock.json']) {
    cpSync(join(root, 'tools', 'registry', 'mirror', file), join(tree, 'tools', 'registry', 'mirror', file));
  }
  for (const pkg of workspacePackages()) {
    const target = join(tree, 'packages', pkg.folder);
    mkdirSync(target, { recursive: true });
    for (const entry of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', ...pkg.manifest.files]) {
      if (existsSync(join(pkg.dir, entry))) cpSync(join(pkg.dir, entry), join(target, entry), { recursive: true });
    }
  }
  writeFileSync(
    join(tree, '.changeset', 'release-check-round-trip.md'),
    '---\n"@prun/unit-state": minor\n---\n\nA bump made by pnpm release:check, so that every round trip versions something.\n',
  );
}

/** Workspace packages that depend on `name`, directly or through another: the names a bump of it moves. */
export function dependentsOf(name, manifests) {
  const moved = new Set([name]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [dependent, manifest] of manifests) {
      if (moved.has(dependent)) continue;
      if (Object.keys(manifest.dependencies ?? {}).some((dep) => moved.has(dep))) {
        moved.add(dependent);
        grew = true;
      }
    }
  }
  moved.delete(name);
  return moved;
}

/**
 * In a copy of the release tree holding one changeset (`@prun/unit-state: minor`), versioning
 * moves only unit-state (a minor) and what depends on it (a patch each): every package has its
 * own version, with no fixed or linked group dragging the rest along.
 */
function versionsAreIndependent(tree, before) {
  const copy = join(work, 'tree-one-changeset');
  cpSync(tree, copy, { recursive: true });
  const changesets = join(copy, '.changeset');
  for (const file of readdirSync(changesets)) if (file.endsWith('.md') && file !== 'README.md') rmSync(join(changesets, file));
  writeFileSync(join(changesets, 'only-unit-state.md'), '---\n"@prun/unit-state": minor\n---\n\nOne bump, to show which packages it moves.\n');
  const version = runSync(join(root, 'node_modules', '.bin', 'changeset'), ['version'], { cwd: copy });
  if (!check(version.status === 0, 'changeset version with one @prun/unit-state changeset', version.stdout + version.stderr)) return;
  const after = new Map(workspacePackages(copy).map((pkg) => [pkg.manifest.name, pkg.manifest]));
  const moved = [...before].filter(([name, was]) => after.get(name).version !== was).map(([name]) => name).sort();
  const dependents = dependentsOf('@prun/unit-state', after);
  const expected = ['@prun/unit-state', ...dependents].sort();
  const bump = (was, now) => {
    const [a, b] = [was, now].map((v) => v.split('.').map(Number));
    return a[0] !== b[0] ? 'major' : a[1] !== b[1] ? 'minor' : 'patch';
  };
  const wrongKind = moved.filter((name) => bump(before.get(name), after.get(name).version) !== (name === '@prun/unit-state' ? 'minor' : 'patch'));
  check(
    JSON.stringify(moved) === JSON.stringify(expected) && wrongKind.length === 0,
    `versions are independent: one @prun/unit-state minor moves only it and its ${dependents.size} dependents (a patch each)`,
    `moved: ${moved.map((name) => `${name} ${before.get(name)} -> ${after.get(name).version}`).join(', ')}\nexpected to move: ${expected.join(' ')}`,
  );
  rmSync(copy, { recursive: true, force: true });
}

/** Files of a tarball, relative to its `package/` folder. */
function tarballFiles(tgz) {
  const list = runSync('tar', ['-tzf', tgz]);
  if (list.status !== 0) throw new Error(`tar -tzf ${tgz}: ${list.stderr}`);
  return list.stdout.split('\n').filter((line) => line !== '' && !line.endsWith('/')).map((line) => line.replace(/^package\//u, '')).sort();
}

/** Files a tarball may hold: its `files` entries, plus what npm always adds. */
function outsideFiles(files, manifest) {
  const always = /^(package\.json|README(\.[^/]*)?|LICEN[CS]E(\.[^/]*)?)$/iu;
  const allowed = manifest.files.map((entry) => entry.replace(/\/$/u, ''));
  return files.filter((file) => !always.test(file) && !allowed.some((entry) => file === entry || file.startsWith(`${entry}/`)));
}

async function main() {
  process.stdout.write(`release check in ${work}\n`);
  if (!existsSync(join(root, 'tools', 'registry', 'node_modules', 'verdaccio'))) {
    fail('verdaccio is not installed: run node tools/registry/install.mjs (the root postinstall does)');
    return;
  }
  try {
    selfTest();
    ok('the release tools pass their self-test (tools/release/self-test.mjs)');
  } catch (error) {
    fail('the release tools fail their self-test (tools/release/self-test.mjs)', error.stack);
    return;
  }
  const build = runSync('pnpm', ['exec', 'nx', 'run-many', '-t', 'build'], { cwd: root });
  if (!check(build.status === 0, 'pnpm build', build.stdout + build.stderr)) return;
  const problems = checkWorkspace();
  if (!check(problems.length === 0, 'pnpm meta: every manifest is ready to publish', problems.join('\n'))) return;

  // 2. The release tree, versioned by changesets.
  const tree = join(work, 'tree');
  stageReleaseTree(tree);
  const before = new Map(workspacePackages(tree).map((pkg) => [pkg.manifest.name, pkg.manifest.version]));
  versionsAreIndependent(tree, before);
  // The one command RELEASING.md gives, as the release tree's package.json defines it; the
  // checkout's changeset bin stands in for the tree's node_modules, offline (no registry yet),
  // and pnpm must not install the tree before running the script (it would refresh the lockfile).
  const offline = {
    ...process.env,
    PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}`,
    npm_config_offline: 'true',
    pnpm_config_verify_deps_before_run: 'false',
  };
  const version = runSync('pnpm', ['run', 'release:version'], { cwd: tree, env: offline });
  if (!check(version.status === 0, 'pnpm release:version', version.stdout + version.stderr)) return;
  // What the release commit's clean clone runs first: its lockfile must match its manifests.
  const frozen = runSync('pnpm', ['install', '--frozen-lockfile', '--offline', '--ignore-scripts'], { cwd: tree, env: offline });
  check(frozen.status === 0, 'the versioned tree installs with pnpm install --frozen-lockfile', frozen.stdout + frozen.stderr);
  for (const dir of [tree, ...workspacePackages(tree).map((pkg) => pkg.dir)]) rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
  const versioned = workspacePackages(tree);
  const manifests = new Map(versioned.map((pkg) => [pkg.manifest.name, pkg.manifest]));
  const unitState = manifests.get('@prun/unit-state');
  check(unitState.version !== before.get('@prun/unit-state'), `changeset version bumped @prun/unit-state ${before.get('@prun/unit-state')} -> ${unitState.version}`);
  const stale = versioned.flatMap((pkg) =>
    Object.entries(pkg.manifest.dependencies ?? {})
      .filter(([dep, range]) => manifests.has(dep) && range !== `^${manifests.get(dep).version}`)
      .map(([dep, range]) => `${pkg.manifest.name} wants ${dep}@${range}, which is at ${manifests.get(dep).version}`),
  );
  check(stale.length === 0, 'every workspace dependency range follows the versioned package', stale.join('\n'));
  const untouched = [...before].filter(([name, was]) => manifests.get(name).version === was).map(([name]) => name);
  process.stdout.write(`     versions: ${versioned.map((pkg) => `${pkg.manifest.name}@${pkg.manifest.version}`).join(' ')}\n`);
  process.stdout.write(`     unchanged by this version run: ${untouched.join(' ') || '(none)'}\n`);

  // 3. The registry.
  const registry = await startRegistry(join(work, 'registry'));
  writeFileSync(join(work, 'npmrc'), '');
  ok(`verdaccio listening at ${registry}`);
  const env = clientEnv(registry);
  const mirrored = await publishMirror(registry);
  ok(`mirrored ${mirrored} third-party tarballs into the registry`);
  const thirdParty = new Map(lockedPackages().map((pkg) => [pkg.name, pkg.dependencies ?? {}]));

  // 4. The release script: dry run, release, release again.
  const releaseBin = join(tree, 'tools', 'release', 'publish.mjs');
  const releaseArgs = ['--registry', registry, '--allow-dirty', '--no-build'];
  const dry = runSync(process.execPath, [releaseBin, '--dry-run', ...releaseArgs], { cwd: tree, env });
  const names = dependencyOrder(versioned).map((pkg) => pkg.manifest.name);
  const wouldPublish = [...dry.stdout.matchAll(/^would publish (\S+)@/gmu)].map((match) => match[1]);
  check(dry.status === 0 && wouldPublish.join(' ') === names.join(' '), 'pnpm release --dry-run lists every package in dependency order', dry.stdout + dry.stderr);
  const afterDry = await fetch(`${registry}@prun%2funit-state`);
  check(afterDry.status === 404, 'the dry run published nothing', `GET @prun/unit-state: HTTP ${afterDry.status}`);
  const real = runSync(process.execPath, [releaseBin, ...releaseArgs], { cwd: tree, env });
  const published = [...real.stdout.matchAll(/^published (\S+)@/gmu)].map((match) => match[1]);
  if (!check(real.status === 0 && published.join(' ') === names.join(' '), `pnpm release published ${published.length} packages in dependency order`, real.stdout + real.stderr)) return;
  process.stdout.write(`     order: ${published.join(' -> ')}\n`);
  const again = runSync(process.execPath, [releaseBin, ...releaseArgs], { cwd: tree, env });
  check(again.status === 0 && /^release: 0 of \d+ package\(s\) to publish/mu.test(again.stdout), 'a second pnpm release finds nothing to publish', again.stdout + again.stderr);

  // 5. What the registry serves.
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs, { recursive: true });
  const sizes = new Map();
  for (const pkg of versioned) {
    const { name, version: v } = pkg.manifest;
    // What `npm i` would download: the packument's tarball URL for this version.
    const packument = await (await fetch(`${registry}${name.replace('/', '%2f')}`)).json();
    const url = packument.versions?.[v]?.dist?.tarball;
    if (!check(url !== undefined, `${name}@${v} is on the registry`, JSON.stringify(packument).slice(0, 400))) continue;
    const tgz = join(tarballs, `${pkg.folder}-${v}.tgz`);
    writeFileSync(tgz, Buffer.from(await (await fetch(url)).arrayBuffer()));
    const files = tarballFiles(tgz);
    const outside = outsideFiles(files, pkg.manifest);
    const servedManifest = JSON.parse(runSync('tar', ['-xzOf', tgz, 'package/package.json']).stdout);
    const workspaceRanges = Object.entries(servedManifest.dependencies ?? {}).filter(([, range]) => range.startsWith('workspace:'));
    check(
      outside.length === 0 && workspaceRanges.length === 0,
      `${name}@${v}: the tarball holds only its files list (${files.length} files) and real version ranges`,
      `outside ${JSON.stringify(pkg.manifest.files)}:\n${outside.join('\n')}\n${JSON.stringify(workspaceRanges)}`,
    );
    sizes.set(name, { tarball: statSync(tgz).size, files });
  }

  // 6. Each package alone, from the registry.
  const installs = await inParallel(versioned, 4, async (pkg) => {
    const prefix = join(work, 'alone', pkg.folder);
    const install = await run('npm', ['i', '-g', '--prefix', prefix, pkg.manifest.name], { env });
    return { pkg, prefix, install };
  });
  const prefixes = new Map();
  for (const { pkg, prefix, install } of installs) {
    const name = pkg.manifest.name;
    if (!check(install.code === 0, `npm i -g ${name} alone`, install.stderr)) continue;
    prefixes.set(name, prefix);
    const nodeModules = join(prefix, 'lib', 'node_modules');
    const installed = installedPackages(nodeModules);
    const expected = expectedClosure(name, manifests, thirdParty);
    const extra = [...installed].filter((dep) => !expected.has(dep));
    const missing = [...expected].filter((dep) => !installed.has(dep));
    check(extra.length === 0 && missing.length === 0, `${name}: the install pulled exactly its declared closure (${installed.size} packages)`, `extra: ${extra.join(' ')}\nmissing: ${missing.join(' ')}`);
    const size = sizes.get(name) ?? {};
    size.installed = treeBytes(nodeModules);
    sizes.set(name, size);
    const bins = Object.keys(pkg.manifest.bin ?? {});
    const smoke = bins.length > 0
      ? bins.map((bin) => [join(prefix, 'bin', bin), ['--help'], `${bin} --help`])
      : Object.keys(pkg.manifest.exports ?? { '.': '' })
          .filter((subpath) => subpath !== './package.json')
          .map((subpath) => {
            const specifier = subpath === '.' ? name : `${name}/${subpath.slice(2)}`;
            return [process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(specifier)})`], `import ${specifier}`];
          });
    for (const [command, argv, label] of smoke) {
      // From <prefix>/lib, `import(name)` resolves through <prefix>/lib/node_modules as a user's would.
      const result = runSync(command, argv, { cwd: join(prefix, 'lib'), env: ownHome });
      check(result.status === 0, `${name}: ${label}`, result.stderr);
    }
  }
  await realRuns(prefixes, manifests);

  // 7. npm pack, from the release tree's package folders.
  const npmPacked = join(work, 'npm-packed');
  mkdirSync(npmPacked, { recursive: true });
  await inParallel(versioned, 4, async (pkg) => {
    const name = pkg.manifest.name;
    const pack = await run('npm', ['pack', '--json', '--pack-destination', npmPacked], { cwd: pkg.dir, env });
    if (pack.code !== 0) return fail(`npm pack in packages/${pkg.folder}`, pack.stderr);
    const tgz = join(npmPacked, JSON.parse(pack.stdout)[0].filename);
    const project = join(work, 'npm-pack-install', pkg.folder);
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'package.json'), '{"name": "try-it", "private": true}\n');
    const install = await run('npm', ['i', tgz], { cwd: project, env });
    const same = JSON.stringify(tarballFiles(tgz)) === JSON.stringify(sizes.get(name)?.files);
    check(install.code === 0 && same, `npm pack of ${name} installs with plain npm i${same ? '' : ' (but its files differ from the published tarball)'}`, install.stderr);
  });

  // 8. The user guide.
  const guide = await runGuide({ registry, env: clientEnv(registry), work: join(work, 'guide') });
  for (const result of guide.results) {
    if (result.ok) ok(`guide: ${result.label}`);
    else fail(`guide: ${result.label}`, result.detail);
  }

  process.stdout.write('\npackage                tarball   installed alone\n');
  for (const name of names) {
    const size = sizes.get(name) ?? {};
    process.stdout.write(`${name.padEnd(22)} ${formatBytes(size.tarball ?? 0).padStart(7)}   ${formatBytes(size.installed ?? 0).padStart(7)}\n`);
  }
  const installed = new Map(names.filter((name) => sizes.get(name)?.installed !== undefined).map((name) => [name, sizes.get(name).installed]));
  if (updateReadme) {
    // Sizes are facts of the lone installs alone: written whenever every package installed.
    if (check(installed.size === names.length, 'README.md package table: install sizes updated', 'not every package installed, so not every size is known')) {
      updateReadmeSizes(new Map([...installed].map(([name, bytes]) => [name, formatBytes(bytes)])));
    }
  } else {
    const drift = sizeDrift(readFileSync(join(root, 'README.md'), 'utf8'), installed, formatBytes, SIZE_TOLERANCE);
    check(drift.length === 0, `README.md package table: every install size within ${SIZE_TOLERANCE * 100}% of the measured one`, `${drift.join('\n')}\nrun pnpm release:check --update-readme and commit README.md`);
  }
}

/** The bins doing real work, each from its own lone install. */
async function realRuns(prefixes, manifests) {
  const scratch = join(work, 'runs');
  const home = join(scratch, 'home');
  const temp = join(scratch, 'tmp');
  mkdirSync(home, { recursive: true });
  mkdirSync(temp, { recursive: true });
  const agyEnv = { ...process.env, HOME: home, TMPDIR: temp, XDG_STATE_HOME: join(scratch, 'state'), ANTIGRAVITY_BIN: fakeAgy, ANTIGRAVITY_PREFLIGHT: 'off', NO_COLOR: '1' };

  // A state dir made by the real dispatcher (its own lone install) driving tools/fake-agy.
  const dispatcher = prefixes.get('@prun/dispatcher-agy');
  writeFileSync(join(scratch, 'prompt.md'), 'Unit u1: say hello\n');
  const dispatch = dispatcher
    ? runSync(join(dispatcher, 'bin', 'prun-dispatch-agy'), ['--prompt-file', 'prompt.md', '--result-file', join(scratch, 'u1.md'), '--unit-id', 'u1'], { cwd: scratch, env: agyEnv })
    : { status: 1, stdout: '', stderr: 'no lone install of @prun/dispatcher-agy' };
  const stateDir = /^STATE-DIR (.+)$/mu.exec(dispatch.stdout)?.[1];
  if (!check(dispatch.status === 0 && stateDir !== undefined, 'prun-dispatch-agy (alone) made a state dir with fake-agy', dispatch.stdout + dispatch.stderr)) return;

  const monitor = prefixes.get('@prun/monitor');
  if (monitor) {
    const result = runSync(join(monitor, 'bin', 'prun-monitor'), [stateDir], { cwd: scratch, env: { ...agyEnv, PRUN_MONITOR_STABLE_WINDOW: '1' } });
    check(result.status === 0 && /^MONITOR-EVENT all-done$/mu.test(result.stdout) && /^UNIT \S+ done$/mu.test(result.stdout), '@prun/monitor alone: prun-monitor reports the unit done', result.stdout + result.stderr);
  }
  const snapshot = prefixes.get('@prun/snapshot-tail');
  if (snapshot) {
    const dest = join(scratch, 'snapshots');
    const result = runSync(join(snapshot, 'bin', 'prun-snapshot-tail'), ['--unit', stateDir, '--dest', dest, '--json'], { cwd: scratch, env: agyEnv });
    const zips = existsSync(dest) ? readdirSync(dest).filter((file) => file.endsWith('.zip')) : [];
    let verified = zips.length === 1;
    if (verified && runSync('unzip', ['-v']).status === 0) verified = runSync('unzip', ['-tq', join(dest, zips[0])]).status === 0;
    check(result.status === 0 && verified, '@prun/snapshot-tail alone: prun-snapshot-tail wrote a verified ZIP', result.stdout + result.stderr);
  }
  const jobs = prefixes.get('@prun/job-runner');
  if (jobs) {
    const llm = await startFakeLlm();
    try {
      const { env: piEnv, cwd } = makePiEnv({ port: llm.port, root: join(scratch, 'pi') });
      // Asynchronous: the fake model server answers from this process's event loop.
      const result = await run(join(jobs, 'bin', 'prun-job'), ['run', '--name', 'hello', 'say hello'], { cwd, env: piEnv });
      const status = await run(join(jobs, 'bin', 'prun-job'), ['status', 'hello'], { cwd, env: piEnv });
      check(result.code === 0 && /ECHO: say hello/u.test(result.stdout) && /done/u.test(status.stdout), '@prun/job-runner alone: prun-job ran the real pi against fake-llm', result.stdout + result.stderr + status.stdout + status.stderr);
    } finally {
      await llm.close();
    }
  }
  const cli = prefixes.get('@prun/cli');
  if (cli) {
    const prun = join(cli, 'bin', 'prun');
    const version = runSync(prun, ['--version'], { env: agyEnv });
    check(version.stdout.trim() === manifests.get('@prun/cli').version, `@prun/cli alone: prun --version is ${manifests.get('@prun/cli').version}`, version.stdout + version.stderr);
    // unit_a: the unit fake-agy's stock answer names, whatever its version.
    writeFileSync(join(scratch, 'plan.json'), JSON.stringify({ units: [{ id: 'unit_a', prompt: 'say hello' }] }));
    const batch = runSync(prun, ['batch', 'plan.json', '--dir', 'fanout'], { cwd: scratch, env: agyEnv });
    check(batch.status === 0 && existsSync(join(scratch, 'fanout', 'results', 'unit_a.md')), '@prun/cli alone: prun batch ran a unit through fake-agy', batch.stdout + batch.stderr);
    const monitor2 = runSync(prun, ['monitor', stateDir], { cwd: scratch, env: { ...agyEnv, PRUN_MONITOR_STABLE_WINDOW: '1' } });
    check(monitor2.status === 0 && /^MONITOR-EVENT all-done$/mu.test(monitor2.stdout), '@prun/cli alone: prun monitor fronts prun-monitor', monitor2.stdout + monitor2.stderr);
  }
}

try {
  await main();
} catch (error) {
  fail(`release check crashed: ${error.message}${error.cause ? ` (${error.cause.message ?? error.cause})` : ""}`, error.stack);
} finally {
  for (const child of children) child.kill('SIGTERM');
  if (!keep) rmSync(work, { recursive: true, force: true });
  else process.stdout.write(`kept ${work}\n`);
}
process.stdout.write(failures === 0 ? '\nrelease check: passed\n' : `\nrelease check: ${failures} failure(s)\n`);
process.exitCode = failures === 0 ? 0 : 1;
