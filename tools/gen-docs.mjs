// `pnpm gen:docs`: writes what is generated from each bin's declaration (its package's
// src/spec.ts, built to dist/spec.js): the exit-code table in the package README and in
// docs/exit-codes.md (between `<!-- generated: exit-codes:BIN ... -->` markers), and the
// completion scripts the package ships in completions/. `--check` writes nothing and exits 1
// naming every file that is out of date. Run `pnpm build` first.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every package that ships a bin, with the declarations its dist/spec.js exports as BINS. */
export async function declaredPackages() {
  const packages = [];
  for (const dir of readdirSync(join(ROOT, 'packages')).sort()) {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8'));
    if (!manifest.bin) continue;
    const specFile = join(ROOT, 'packages', dir, 'dist', 'spec.js');
    const module = existsSync(specFile) ? await import(pathToFileURL(specFile).href) : null;
    // A package whose declaration needs others' (prun nests every bin) exports allBins().
    const bins = module === null ? null : module.allBins ? await module.allBins() : module.BINS;
    packages.push({ dir, bins: Object.keys(manifest.bin), specs: bins });
  }
  return packages;
}

const COMPLETION_EXT = { bash: 'bash', zsh: 'zsh', fish: 'fish' };

/** path → the content it must have. Files whose markers are missing are reported, not guessed. */
export async function generatedFiles() {
  const { completionScript, exitCodeTable, replaceBetweenMarkers, SHELLS } = await import(
    pathToFileURL(join(ROOT, 'packages/kit/dist/spec/index.js')).href
  );
  const files = new Map();
  const problems = [];
  const docsPath = join(ROOT, 'docs/exit-codes.md');
  let docs = readFileSync(docsPath, 'utf8');
  for (const pkg of await declaredPackages()) {
    if (pkg.specs === null) continue;
    const readmePath = join(ROOT, 'packages', pkg.dir, 'README.md');
    let readme = readFileSync(readmePath, 'utf8');
    for (const spec of pkg.specs) {
      const table = exitCodeTable(spec.exitCodes);
      const name = `exit-codes:${spec.name}`;
      const inReadme = replaceBetweenMarkers(readme, name, table);
      if (inReadme === null) problems.push(`${readmePath}: no markers for ${name}`);
      else readme = inReadme;
      const inDocs = replaceBetweenMarkers(docs, name, table);
      if (inDocs === null) problems.push(`${docsPath}: no markers for ${name}`);
      else docs = inDocs;
      for (const shell of SHELLS) {
        files.set(join(ROOT, 'packages', pkg.dir, 'completions', `${spec.name}.${COMPLETION_EXT[shell]}`), completionScript(spec, shell));
      }
    }
    files.set(readmePath, readme);
  }
  files.set(docsPath, docs);
  return { files, problems };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const check = process.argv.includes('--check');
  const { files, problems } = await generatedFiles();
  const stale = [];
  for (const [path, content] of files) {
    const current = existsSync(path) ? readFileSync(path, 'utf8') : null;
    if (current === content) continue;
    stale.push(path);
    if (!check) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
  }
  for (const problem of problems) process.stderr.write(`gen-docs: ${problem}\n`);
  for (const path of stale) process.stderr.write(`gen-docs: ${check ? 'out of date' : 'wrote'}: ${path.slice(ROOT.length + 1)}\n`);
  process.exitCode = problems.length > 0 || (check && stale.length > 0) ? 1 : 0;
}
