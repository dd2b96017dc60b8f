// review11b (#11 "What to build": the library never calls process.exit; kit's endProcess is the
// bin edge's one way out; one list of stop signals, @prun/kit/cli's STOP_SIGNALS). Scans the
// packages' sources as text.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { repoRoot } from './helpers.js';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

const files = readdirSync(join(repoRoot, 'packages')).flatMap((pkg) => {
  try {
    return sources(join(repoRoot, 'packages', pkg, 'src'));
  } catch {
    return [];
  }
});

function hits(pattern: RegExp, except: (file: string) => boolean): string[] {
  return files
    .filter((file) => !except(file))
    .flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (pattern.test(line) && !/^\s*(\/\/|\*)/.test(line) ? [`${relative(repoRoot, file)}:${i + 1}`] : [])),
    );
}

it('no process.exit( in package sources but kit/cli endProcess (review11b)', () => {
  expect(hits(/process\.exit\(/, (file) => file.endsWith(join('kit', 'src', 'cli', 'index.ts')))).toEqual([]);
});

it('the stop signals are listed once, in @prun/kit/cli (review11b)', () => {
  expect(hits(/'SIGINT'.*'SIGHUP'|'SIGHUP'.*'SIGINT'/, (file) => file.endsWith(join('kit', 'src', 'cli', 'index.ts')))).toEqual([]);
});
