// Every bin's --help, completion scripts and exit-code tables come from its declaration
// (packages/<pkg>/src/spec.ts): this fails when any of them disagrees with it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commandAt, completionScript, renderHelp, SHELLS, type BinSpec, type CommandSpec } from '@prun/kit/spec';
import { OWN_SPEC } from '../src/spec.js';
import { repoRoot } from './helpers.js';

interface Declared {
  dir: string;
  bins: string[];
  specs: readonly BinSpec[] | null;
}
const gen = (await import(pathToFileURL(join(repoRoot, 'tools/gen-docs.mjs')).href)) as {
  declaredPackages: () => Promise<Declared[]>;
  generatedFiles: () => Promise<{ files: Map<string, string>; problems: string[] }>;
};
const packages = await gen.declaredPackages();

/** Every command path of a declaration, the bin itself first. */
function paths(command: CommandSpec, prefix: string[] = []): string[][] {
  return [prefix, ...(command.commands ?? []).filter((sub) => !sub.hidden).flatMap((sub) => paths(sub, [...prefix, sub.name]))];
}

function helpOf(dir: string, bin: string, path: string[]): { status: number | null; stdout: string } {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  const result = spawnSync(process.execPath, [join(repoRoot, 'packages', dir, manifest.bin[bin]!), ...path, '--help'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH },
  });
  return { status: result.status, stdout: result.stdout };
}

describe('every bin is declared', () => {
  it.each(packages.map((pkg) => [pkg.dir, pkg] as const))('%s declares each of its bins', (_dir, pkg) => {
    expect(pkg.specs, `packages/${pkg.dir}/src/spec.ts exports BINS`).not.toBeNull();
    expect(pkg.specs!.map((spec) => spec.name).sort()).toEqual([...pkg.bins].sort());
  });
});

describe('--help is the declaration rendered, for the bin and every subcommand', () => {
  for (const pkg of packages) {
    for (const spec of pkg.specs ?? []) {
      // prun's tree nests every bin, whose help is its own (`prun job run --help` is prun-job's):
      // only prun's top level here, its own commands below.
      for (const path of spec.name === 'prun' ? [[]] : paths(spec)) {
        it(`${[spec.name, ...path].join(' ')} --help`, () => {
          const declared = renderHelp(spec, path);
          const shown = helpOf(pkg.dir, spec.name, path);
          expect(shown.status).toBe(0);
          expect(shown.stdout).toBe(declared);
          expect(commandAt(spec, path)).toBeDefined();
        });
      }
    }
  }
  // One test per command, so each has its own time budget on a loaded machine.
  it.each((OWN_SPEC.commands ?? []).filter((command) => !command.hidden).map((command) => command.name))("prun %s prints its declared help, and prun help CMD the same", (command) => {
    const expected = renderHelp(OWN_SPEC, [command]);
    for (const argv of [[command, '--help'], [command, '-h'], ['help', command]]) {
      const result = spawnSync(process.execPath, [join(repoRoot, 'packages/prun/bin/prun.js'), ...argv], { encoding: 'utf8' });
      expect({ argv, status: result.status, stdout: result.stdout }).toEqual({ argv, status: 0, stdout: expected });
    }
  });
});

describe('generated files match the declarations (run `pnpm gen:docs` after changing one)', () => {
  it('every README, docs/exit-codes.md and completions/ script is up to date', async () => {
    const { files, problems } = await gen.generatedFiles();
    expect(problems).toEqual([]);
    const stale = [...files].filter(([path, content]) => {
      try {
        return readFileSync(path, 'utf8') !== content;
      } catch {
        return true;
      }
    });
    expect(stale.map(([path]) => path.slice(repoRoot.length))).toEqual([]);
  });

  it('prun completion SHELL carries every bin’s own script, as its package ships it', async () => {
    for (const shell of SHELLS) {
      const out = spawnSync(process.execPath, [join(repoRoot, 'packages/prun/bin/prun.js'), 'completion', shell], { encoding: 'utf8' });
      expect(out.status).toBe(0);
      for (const pkg of packages) {
        for (const spec of pkg.specs ?? []) {
          if (spec.name === 'prun') continue;
          expect(out.stdout).toContain(completionScript(spec, shell));
          expect(readFileSync(join(repoRoot, 'packages', pkg.dir, 'completions', `${spec.name}.${shell}`), 'utf8')).toBe(completionScript(spec, shell));
        }
      }
    }
  });
});
