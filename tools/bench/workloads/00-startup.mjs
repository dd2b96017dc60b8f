import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const title = 'bin start-up: `--version` of each bin beside bare `node -e 0`';

export async function run(ctx) {
  const bins = join(ctx.repoRoot, 'node_modules', '.bin');
  const rows = [{ label: 'node -e 0 (floor)', ms: await ctx.measure(() => execFileSync(process.execPath, ['-e', '0'])) }];
  for (const bin of ['prun-env-scrub', 'prun-quota', 'prun-model-resolve']) {
    const ms = await ctx.measure(() => {
      try {
        execFileSync(join(bins, bin), ['--version'], { stdio: 'ignore' });
      } catch {
        // A bin that is not built yet still gets timed; its exit code is not the point here.
      }
    });
    rows.push({ label: `${bin} --version`, ms });
  }
  ctx.report(rows);
}
