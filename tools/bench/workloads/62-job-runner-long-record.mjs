// One very long pi record (a stdout line): the runner's time and peak memory for a 100 MB line
// beside a 10 MB one. Linear reading shows at most about 10x in time; memory stays near the
// 10 MB run's, because a record over the 16 MiB limit is dropped as it streams.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const title = 'job-runner: one pi record of 100 MB beside one of 10 MB (time and runner peak memory)';

export async function run(ctx) {
  const bin = join(ctx.repoRoot, 'packages', 'job-runner', 'bin', 'prun-job.js');
  const standIn = join(ctx.repoRoot, 'packages', 'job-runner', 'test', 'fixtures', 'stand-in-pi.mjs');
  const root = ctx.tempDir('prun-bench-line-');
  const project = join(root, 'project');
  mkdirSync(project, { recursive: true });
  const env = { ...process.env, XDG_STATE_HOME: join(root, 'state'), PI_CODING_AGENT_DIR: join(root, 'agent'), MULTI_AGENT_PI_BIN: standIn, PWD: project };
  let serial = 0;
  /** One foreground run whose pi sends one record of `bytes`; the stand-in times the runner's read. */
  const once = (bytes) => {
    serial += 1;
    const report = join(root, `report-${serial}.json`);
    execFileSync(process.execPath, [bin, 'run', '--name', `line-${serial}`, 'bench'], {
      cwd: project,
      env: { ...env, STANDIN_MODE: 'line', STANDIN_LINE_BYTES: String(bytes), STANDIN_REPORT: report },
      stdio: 'ignore',
    });
    return JSON.parse(readFileSync(report, 'utf8'));
  };
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  once(1_000_000);
  // Interleaved rounds (10 MB, 100 MB, 10 MB, ...), so a change in load hits both alike.
  const runs = { small: [], large: [] };
  for (let round = 0; round < 3; round += 1) {
    runs.small.push(once(10_000_000));
    runs.large.push(once(100_000_000));
  }
  const sample = (list) => ({ ms: median(list.map((r) => r.ms)), peakMiB: median(list.map((r) => r.runnerPeakKb)) / 1024 });
  const small = sample(runs.small);
  const large = sample(runs.large);
  ctx.table(
    [
      { label: 'a 10 MB record, read and parsed (baseline)', ms: small.ms, rssMiB: small.peakMiB },
      { label: 'a 100 MB record, streamed past', ms: large.ms, rssMiB: large.peakMiB },
    ],
    {
      readme: 'job-runner',
      title: 'one pi record of 100 MB beside one of 10 MB',
      note: "Time: the runner's read of the record, as the stand-in pi sees it; peak RSS: the runner's. Linear and bounded: ten times the bytes cost at most about ten times the time, and a record over the 16 MiB limit is dropped as it streams, so memory stays near the 10 MB run's.",
    },
  );
}
