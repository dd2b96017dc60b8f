/**
 * The upstream contract tests again, with the worker in its own PID namespace (the default
 * where the machine allows it): isolation must not change any observable contract. Skipped,
 * with the reason, where no PID namespace is available.
 */
import { describe, test } from 'vitest';
import { planLaunch } from '../src/isolation.js';

const plan = planLaunch('auto', process.platform, process.getuid?.() === 0);
if (plan.isolation.kind === 'pid') {
  process.env.PRUN_DISPATCH_TEST_ISOLATE = 'pid';
  await import('./upstream.test.js');
} else {
  const reason = plan.isolation.reason;
  describe('upstream contract tests with an isolated worker', () => {
    test.skip(`skipped: ${reason}`, () => undefined);
  });
}
