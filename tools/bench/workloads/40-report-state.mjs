import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const title = 'report-state over 10,000 units (JSON and text) beside find and a bare readdir+stat loop';

const UNITS = 10_000;

// The same corpus shape an interrupted fan-out leaves: most units resolved, some results
// missing or empty, some without a result-file entry.
function buildCorpus(root) {
  const results = join(root, 'results');
  mkdirSync(results);
  const tail = 'x'.repeat(512);
  for (let i = 0; i < UNITS; i += 1) {
    const unit = join(root, `prun-task-0123abcd-unit_${i}-4242-${String(i).padStart(16, '0')}`);
    mkdirSync(unit);
    writeFileSync(join(unit, 'tail'), tail);
    if (i % 10 === 9) continue;
    const result = join(results, `unit_${i}.md`);
    writeFileSync(join(unit, 'result-file'), `${result}\n`);
    if (i % 10 < 6) writeFileSync(result, `# unit_${i} result\n`);
    else if (i % 10 === 6) writeFileSync(result, '');
  }
}

const NODE_FLOOR = `
const fs = require('node:fs');
const root = process.argv[1];
let total = 0;
for (const name of fs.readdirSync(root)) {
  if (!name.startsWith('prun-task-')) continue;
  const unit = root + '/' + name;
  fs.statSync(unit);
  try { total += fs.statSync(unit + '/tail').size; } catch {}
  try { fs.statSync(fs.readFileSync(unit + '/result-file', 'utf8').trim()); } catch {}
}
process.stdout.write(total + '\\n');
`;

export async function run(ctx) {
  const root = ctx.tempDir('prun-bench-report-');
  buildCorpus(root);
  const bin = join(ctx.repoRoot, 'packages', 'report-state', 'bin', 'prun-report-state.js');
  const quiet = { stdio: ['ignore', 'ignore', 'ignore'], maxBuffer: 1 << 28 };
  const tolerate = (fn) => () => {
    try {
      fn();
    } catch (error) {
      // Exit 1 (a partial sweep) is still a full sweep; anything else is a broken run.
      if (error.status !== 1) throw error;
    }
  };
  const opts = { runs: 3, warmup: 1 };
  const rows = [
    {
      label: "find -maxdepth 2 -name tail -printf '%s' (floor)",
      ms: await ctx.measure(() => execFileSync('find', [root, '-maxdepth', '2', '-name', 'tail', '-printf', '%s\n'], quiet), opts),
    },
    {
      label: 'node readdir + stat + read result-file loop',
      ms: await ctx.measure(() => execFileSync(process.execPath, ['-e', NODE_FLOOR, root], quiet), opts),
    },
    {
      label: 'prun-report-state --json --summary',
      ms: await ctx.measure(tolerate(() => execFileSync(process.execPath, [bin, '--root', root, '--json', '--summary'], quiet)), opts),
    },
    {
      label: 'prun-report-state (text) --summary',
      ms: await ctx.measure(tolerate(() => execFileSync(process.execPath, [bin, '--root', root, '--summary'], quiet)), opts),
    },
    {
      label: 'prun-report-state --json --sort tail-bytes-desc',
      ms: await ctx.measure(
        tolerate(() => execFileSync(process.execPath, [bin, '--root', root, '--json', '--sort', 'tail-bytes-desc'], quiet)),
        opts,
      ),
    },
  ];
  ctx.report(rows);
}
