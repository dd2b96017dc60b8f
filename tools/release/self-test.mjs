// The release tools' own decisions, checked on small made-up inputs before the round trip
// trusts them: a checker that accepts everything would make every round trip pass.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bareMetaNames, checkPackage, staleOutputs } from './meta.mjs';
import { GUIDE, outputMatches, parseGuide, timedSteers } from './guide.mjs';
import { parseSize, sizeDrift, withSizes } from './sizes.mjs';
import { dependencyOrder, expectedMetadata } from './workspace.mjs';

export function selfTest() {
  // Expected-output blocks: `...` within a line, `...` lines, spaces, and real mismatches.
  assert.ok(outputMatches(['UNIT prun-task-... done', '...', 'batch .../x: done=3'], ['UNIT prun-task-1-a-2-ff done', 'a', 'b', 'batch /tmp/q/x: done=3']));
  assert.ok(outputMatches(['a   b', ''], ['a b']));
  assert.ok(!outputMatches(['batch .../x: done=3'], ['batch /tmp/x: done=2']));
  assert.ok(!outputMatches(['one'], ['one', 'two']));
  assert.ok(!outputMatches(['one', 'two'], ['one']));
  assert.ok(!outputMatches(['a.c'], ['abc']), 'a dot in the guide is a dot, not any character');

  // Guide blocks: sh blocks run; the bare block right after is their output; others are not.
  const blocks = parseGuide('```sh\n# in the root of your prun checkout\nexport A=1\n```\n\n```\nout\n```\ntext\n```json\n{}\n```\n```sh\nls\n```\nprose\n```\nnot output\n```\n');
  assert.deepEqual(blocks.map((b) => [b.code, b.expected, b.inCheckout]), [['# in the root of your prun checkout\nexport A=1', ['out'], true], ['ls', null, false]]);

  // A steer must not race the steered job's reply; the guide's own steers do not.
  const steers = (prompt) => timedSteers(parseGuide(`\`\`\`sh\nprun job run --background --name one "${prompt}"\nprun job steer one "x"\n\`\`\`\n`));
  assert.equal(steers('[[slow]] tell me').length, 1);
  assert.deepEqual(steers('[[gate:one]] tell me'), []);
  assert.deepEqual(timedSteers(parseGuide(readFileSync(GUIDE, 'utf8'))), []);

  // The documented fake-agy run never refreshes the reader's real quota snapshot.
  const fakeAgyExample = /```sh\n([\s\S]*?)```/u.exec(readFileSync(join(GUIDE, '..', '..', 'tools', 'fake-agy', 'README.md'), 'utf8'))[1];
  assert.match(fakeAgyExample, /\bHOME=\/tmp\//u, 'tools/fake-agy/README.md: its example must set HOME to a scratch dir');

  // The manifest check flags what breaks an install or bloats one.
  const dir = mkdtempSync(join(tmpdir(), 'prun-release-self-test-'));
  try {
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'index.js'), "import { z } from 'zod';\nimport { x } from '@prun/b';\nconst later = () => import('yaml');\n");
    const good = { name: '@prun/a', version: '1.0.0', ...expectedMetadata('a'), files: ['dist'], exports: { '.': './dist/index.js' }, dependencies: { zod: '4.6.7', '@prun/b': '^2.0.0', yaml: '2.9.1' } };
    const versions = new Map([['@prun/a', '1.0.0'], ['@prun/b', '2.0.0']]);
    const mirror = new Map([['zod', new Set(['4.6.7'])], ['yaml', new Set(['2.9.1'])], ['execa', new Set(['9.6.1'])]]);
    const problems = (manifest) => checkPackage({ folder: 'a', dir, path: join(dir, 'package.json'), manifest }, versions, mirror).problems;
    assert.deepEqual(problems(good), []);
    assert.match(problems({ ...good, dependencies: { ...good.dependencies, '@prun/b': 'workspace:*' } }).join('\n'), /@prun\/b is workspace:\*, should be \^2\.0\.0/u);
    assert.match(problems({ ...good, dependencies: { ...good.dependencies, execa: '9.6.1' } }).join('\n'), /declares execa but its built code never imports it/u);
    assert.match(problems({ ...good, dependencies: { '@prun/b': '^2.0.0', yaml: '2.9.1' } }).join('\n'), /imports zod but does not declare it/u);
    // A package loaded synchronously through createRequire is imported too.
    writeFileSync(join(dir, 'dist', 'index.js'), "import { createRequire } from 'node:module';\nimport { z } from 'zod';\nimport { x } from '@prun/b';\nconst yaml = createRequire(import.meta.url)('yaml');\n");
    assert.deepEqual(problems(good), []);
    writeFileSync(join(dir, 'dist', 'index.js'), "import { z } from 'zod';\nimport { x } from '@prun/b';\nconst later = () => import('yaml');\n");
    assert.match(problems({ ...good, files: ['dist', 'src'] }).join('\n'), /files entry src ships something that does not run/u);
    assert.match(problems({ ...good, repository: { type: 'git', url: 'https://example.invalid/prun.git' } }).join('\n'), /repository should be/u);
    assert.match(problems({ ...good, dependencies: { ...good.dependencies, zod: '4.0.0' } }).join('\n'), /zod@4\.0\.0 is not in the local registry's mirror/u);
    mkdirSync(join(dir, 'src', 'commands'), { recursive: true });
    writeFileSync(join(dir, 'src', 'index.ts'), '');
    writeFileSync(join(dir, 'src', 'commands', 'run.ts'), '');
    mkdirSync(join(dir, 'dist', 'commands'));
    for (const file of ['index.d.ts', 'commands/run.js', 'commands.js']) writeFileSync(join(dir, 'dist', file), '');
    assert.deepEqual(staleOutputs(dir), ['dist/commands.js']);
    // A bundled bin's files are the build's own output only where the build script bundles.
    writeFileSync(join(dir, 'dist', 'bundle-bin.js'), '');
    assert.deepEqual(staleOutputs(dir), ['dist/bundle-bin.js', 'dist/commands.js']);
    writeFileSync(join(dir, 'dist', 'bundle-gather-bin.cjs'), '');
    assert.deepEqual(staleOutputs(dir, { scripts: { build: 'tsc && node ../../tools/bundle-bin.mjs --entry bin' } }), ['dist/commands.js']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // Docs naming the meta package: `prun` is the bin, @prun/cli the package.
  assert.deepEqual(bareMetaNames([['d.md', '(`@prun/kit` at the bottom, `prun` at the\ntop)\nrun `prun batch`\n`@prun/cli` with its bin `prun` at the top\n']]), ['d.md:1: (`@prun/kit` at the bottom, `prun` at the']);

  // Publishing order: dependencies first.
  const pkg = (name, deps = {}) => ({ manifest: { name, dependencies: deps } });
  const order = dependencyOrder([pkg('cli', { mon: '^1.0.0', kit: '^1.0.0' }), pkg('mon', { kit: '^1.0.0' }), pkg('kit')]).map((p) => p.manifest.name);
  assert.deepEqual(order, ['kit', 'mon', 'cli']);

  // The README's size column: added once, then updated in place.
  const table = '| package | bin | what |\n|---|---|---|\n| [`@prun/a`](x) | `a` | A. |\n';
  const once = withSizes(table, new Map([['@prun/a', '1 MB']]));
  assert.equal(once, '| package | bin | install size | what |\n| --- | --- | --: | --- |\n| [`@prun/a`](x) | `a` | 1 MB | A. |\n');
  assert.equal(withSizes(once, new Map([['@prun/a', '2 MB']])), once.replace('1 MB', '2 MB'));
  // ...and a drift beyond the tolerance is flagged, a small one is not.
  assert.equal(parseSize('1.5 MB'), 1.5 * 1024 * 1024);
  const mb = 1024 * 1024;
  assert.deepEqual(sizeDrift(once, new Map([['@prun/a', 1.05 * mb]]), String), []);
  assert.equal(sizeDrift(once, new Map([['@prun/a', 1.3 * mb]]), String).length, 1);
  assert.equal(sizeDrift(table, new Map([['@prun/a', mb]]), String).length, 1, 'no size column at all is a drift');
}
