import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The JSON report feeds the one-line total that `pnpm test` prints at the end.
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
