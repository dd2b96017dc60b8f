#!/usr/bin/env node
// `pnpm release`: publish every package whose current version is not yet on the registry,
// each after the workspace packages it depends on, with `pnpm publish`. Versions come from
// `pnpm release:version` (run it first and commit); each package has its own version.
// See RELEASING.md.
//
//   pnpm release [--dry-run] [--registry URL] [--tag TAG] [--provenance] [--allow-dirty] [--no-build]
//
// --dry-run asks the registry what is there and prints what would be published (with each
// tarball's contents from `pnpm publish --dry-run`), publishing nothing. The run refuses
// before publishing anything when the manifests fail `pnpm meta`, when changesets are still
// pending, or (without --allow-dirty) when the git tree has uncommitted changes.
// Exit 0 on success, 1 when a publish or check failed, 2 on a usage error.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { checkWorkspace } from './meta.mjs';
import { dependencyOrder, root, workspacePackages } from './workspace.mjs';

const USAGE = 'usage: pnpm release [--dry-run] [--registry URL] [--tag TAG] [--provenance] [--allow-dirty] [--no-build]';

class ReleaseError extends Error {}

function run(command, args, options = {}) {
  return spawnSync(command, args, { encoding: 'utf8', ...options });
}

/**
 * True when `name@version` is on the registry, false when it is not; throws when the registry
 * cannot say. Asks over HTTP (fast, in parallel); a registry that wants credentials to read
 * is asked through `npm view`, which has the user's.
 */
export async function isPublished(name, version, registry, env = process.env) {
  const base = registry.endsWith('/') ? registry : `${registry}/`;
  let response;
  try {
    response = await fetch(`${base}${name.replace('/', '%2f')}`, { headers: { accept: 'application/vnd.npm.install-v1+json' } });
  } catch (error) {
    throw new ReleaseError(`cannot reach ${registry}: ${error.cause?.message ?? error.message}`);
  }
  if (response.status === 404) return false;
  if (response.ok) return Object.hasOwn((await response.json()).versions ?? {}, version);
  if (response.status !== 401 && response.status !== 403) {
    throw new ReleaseError(`cannot ask ${registry} about ${name}: HTTP ${response.status}`);
  }
  const view = run('npm', ['view', `${name}@${version}`, 'version', '--json', '--registry', registry], { env });
  if (view.status === 0) return view.stdout.trim() !== '';
  if (/E404|404 Not Found|is not in this registry/u.test(view.stderr)) return false;
  throw new ReleaseError(`cannot ask ${registry} about ${name}@${version}: ${view.stderr.trim().split('\n').at(-1)}`);
}

/** The changesets not yet consumed by `changeset version`. */
function pendingChangesets() {
  const dir = join(root, '.changeset');
  return existsSync(dir) ? readdirSync(dir).filter((file) => file.endsWith('.md') && file !== 'README.md') : [];
}

export async function release(argv, { env = process.env, out = process.stdout } = {}) {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dry-run': { type: 'boolean', default: false },
      registry: { type: 'string' },
      tag: { type: 'string' },
      provenance: { type: 'boolean', default: false },
      'allow-dirty': { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const dryRun = values['dry-run'];
  const registry = values.registry ?? run('npm', ['config', 'get', 'registry'], { env }).stdout.trim();
  if (!/^https?:\/\//u.test(registry)) throw new ReleaseError(`not a registry URL: ${registry}`);

  const pending = pendingChangesets();
  if (pending.length > 0) {
    throw new ReleaseError(`${pending.length} changeset(s) not yet applied (${pending.slice(0, 3).join(', ')}): run pnpm release:version and commit first`);
  }
  if (!values['allow-dirty'] && !dryRun) {
    const status = run('git', ['status', '--porcelain'], { cwd: root });
    if (status.status !== 0) throw new ReleaseError('not a git checkout (pass --allow-dirty to publish anyway)');
    if (status.stdout.trim() !== '') throw new ReleaseError('the git tree has uncommitted changes: commit the version bump first (or --allow-dirty)');
  }
  if (!values['no-build']) {
    const build = run('pnpm', ['exec', 'nx', 'run-many', '-t', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (build.status !== 0) throw new ReleaseError('pnpm build failed');
  }
  const problems = checkWorkspace();
  if (problems.length > 0) throw new ReleaseError(`the manifests are not ready (pnpm meta):\n${problems.join('\n')}`);

  const order = dependencyOrder(workspacePackages()).filter((pkg) => !pkg.manifest.private);
  const published = await Promise.all(order.map((pkg) => isPublished(pkg.manifest.name, pkg.manifest.version, registry, env)));
  const todo = order.filter((_, index) => !published[index]);
  out.write(`release: ${todo.length} of ${order.length} package(s) to publish to ${registry}${dryRun ? ' (dry run)' : ''}\n`);
  for (const pkg of order) {
    if (!todo.includes(pkg)) out.write(`skip     ${pkg.manifest.name}@${pkg.manifest.version} (already published)\n`);
  }
  const args = ['publish', '--no-git-checks', '--access', 'public', '--registry', registry];
  if (values.tag) args.push('--tag', values.tag);
  if (values.provenance) args.push('--provenance');
  if (dryRun) args.push('--dry-run');
  for (const pkg of todo) {
    const label = `${pkg.manifest.name}@${pkg.manifest.version}`;
    const publish = run('pnpm', args, { cwd: pkg.dir, env });
    if (publish.status !== 0) {
      throw new ReleaseError(`publishing ${label} (${relative(root, pkg.dir)}) failed:\n${publish.stderr.trim()}\n${publish.stdout.trim()}`);
    }
    out.write(`${dryRun ? 'would publish' : 'published'} ${label}\n`);
    if (dryRun) out.write(`${publish.stderr}${publish.stdout}`.replace(/^/gmu, '    ').trimEnd().concat('\n'));
  }
  return todo.map((pkg) => pkg.manifest.name);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    await release(process.argv.slice(2));
  } catch (error) {
    const usage = error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE';
    process.stderr.write(`release: ${error instanceof ReleaseError || usage ? error.message : error.stack}\n${usage ? `${USAGE}\n` : ''}`);
    process.exitCode = usage ? 2 : 1;
  }
}
