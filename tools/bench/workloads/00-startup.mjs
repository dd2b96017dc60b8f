import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runProcess } from '../lib.mjs';

export const title = 'bin start-up: `--version` of every bin beside bare `node -e ""`';

// Goal (issue 15): every bin's --version within 15 ms and 8 MiB of bare Node in the same run.
const GOAL_MS = 15;
const GOAL_MIB = 8;

/** Every bin of every package: name, package folder, and the JS file npm would link. */
function allBins(repoRoot) {
  const bins = [];
  for (const folder of readdirSync(join(repoRoot, 'packages')).sort()) {
    let manifest;
    try {
      manifest = JSON.parse(readFileSync(join(repoRoot, 'packages', folder, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    for (const [name, file] of Object.entries(manifest.bin ?? {})) bins.push({ name, folder, file: join(repoRoot, 'packages', folder, file) });
  }
  return bins;
}

function envWithout(name) {
  const env = { ...process.env };
  delete env[name];
  return env;
}

async function measureAll(ctx, bins, env, label) {
  // Both sides start the same Node the same way (`node FILE --version` against `node -e ""`),
  // with the same environment, so only the bin's own loading differs.
  const node = process.execPath;
  const cases = [
    { label: 'node -e "" (floor)', run: () => runProcess(node, ['-e', ''], { env }) },
    ...bins.map((bin) => ({ label: `${bin.name} --version`, run: () => runProcess(node, [bin.file, '--version'], { env }) })),
  ];
  const rows = await ctx.compare(cases, { runs: Number(process.env.PRUN_BENCH_STARTUP_RUNS ?? 11), warmup: 1 });
  process.stdout.write(`-- ${label}\n`);
  ctx.table(rows);
  const floor = rows[0];
  // Wall time is the goal; CPU time (user + system) says the same with far less noise when the
  // machine is busy, so both verdicts are printed.
  const over = (row, key) => row[key] !== null && row[key] - floor[key] > GOAL_MS;
  const overRss = (row) => (row.rssMiB ?? 0) - (floor.rssMiB ?? 0) > GOAL_MIB;
  for (const [key, what] of [['ms', 'wall'], ['cpuMs', 'CPU']]) {
    if (floor[key] === null) continue;
    const bad = rows.slice(1).filter((row) => over(row, key) || overRss(row));
    process.stdout.write(
      bad.length === 0
        ? `  goal (${what} time): every bin within ${GOAL_MS} ms and ${GOAL_MIB} MiB of the floor\n`
        : `  goal (${what} time): over ${GOAL_MS} ms or ${GOAL_MIB} MiB above the floor: ${bad.map((row) => row.label.split(' ')[0]).join(', ')}\n`,
    );
  }
  return rows;
}

export async function run(ctx) {
  const bins = allBins(ctx.repoRoot);
  const asGiven = await measureAll(ctx, bins, process.env, `environment as given${process.env.NODE_EXTRA_CA_CERTS ? ' (NODE_EXTRA_CA_CERTS set: Node loads those certificates at every start)' : ''}`);
  let forReadme = asGiven;
  if (process.env.NODE_EXTRA_CA_CERTS) {
    // Most users' machines do not set it; it costs every Node process (floor included) ~25 ms.
    forReadme = await measureAll(ctx, bins, envWithout('NODE_EXTRA_CA_CERTS'), 'NODE_EXTRA_CA_CERTS unset (as on most machines)');
  }
  // Each package's README gets its own bins' rows beside the floor.
  const byFolder = new Map();
  for (const [index, bin] of bins.entries()) {
    if (!byFolder.has(bin.folder)) byFolder.set(bin.folder, [forReadme[0]]);
    byFolder.get(bin.folder).push(forReadme[index + 1]);
  }
  for (const [folder, rows] of byFolder) {
    ctx.record(folder, {
      title: 'Start-up (`--version`) beside bare `node -e ""`',
      rows,
      note: `Goal: within ${GOAL_MS} ms and ${GOAL_MIB} MiB of the floor.${process.env.NODE_EXTRA_CA_CERTS ? ' Measured with NODE_EXTRA_CA_CERTS unset on both sides.' : ''}`,
    });
  }
}
