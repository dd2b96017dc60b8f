import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real pi runs take seconds each (start-up alone is ~2 s on a loaded 2-core machine).
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Each pi holds ~110 MB and a core while it starts; two test files at a time is what 2 cores allow.
    maxWorkers: 2,
    // The JSON report feeds the one-line total that `pnpm test` prints at the end.
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
