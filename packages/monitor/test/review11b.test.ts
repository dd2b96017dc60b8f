// review11b (#11): docs/exit-codes.md: "A command-line mistake is one line, worded the same in
// every bin and ending with where that command's help is" (exceptions: argparse's bins and
// prun-job). prun-gather adds a second, hand-written usage line that is not its declaration's
// (`<result-file> [<result-file> ...]` where its --help says `RESULT_FILE...`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderHelp } from '@prun/kit/spec';
import { GATHER_SPEC } from '../src/spec.js';

const gather = fileURLToPath(new URL('../bin/prun-gather.js', import.meta.url));
const monitor = fileURLToPath(new URL('../bin/prun-monitor.js', import.meta.url));

describe('prun-monitor usage errors (review11b)', () => {
  it('no operand: one stderr line (its hand-written `Usage:` line is a second)', () => {
    const run = spawnSync(process.execPath, [monitor], { encoding: 'utf8', input: '' });
    expect(run.status).toBe(2);
    expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1);
  });
});

describe('prun-gather usage errors (review11b)', () => {
  it.each([[['--bogus']], [[]]])('%j: one stderr line, as every kit bin', (argv) => {
    const run = spawnSync(process.execPath, [gather, ...argv], { encoding: 'utf8', input: '' });
    expect(run.status).toBe(2);
    expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1);
  });

  it('any usage text it prints is its declaration’s', () => {
    const run = spawnSync(process.execPath, [gather, '--bogus'], { encoding: 'utf8' });
    const help = renderHelp(GATHER_SPEC);
    for (const line of run.stderr.split('\n').filter((l) => /^usage:/i.test(l))) {
      expect(help).toContain(line.replace(/^usage:\s*/i, '').split(' | ')[0]);
    }
  });
});
