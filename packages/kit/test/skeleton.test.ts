import { expect, test } from 'vitest';

test('every subpath export loads', async () => {
  for (const m of ['cli', 'py', 'fs', 'spec']) {
    await expect(import(`@prun/kit/${m}`)).resolves.toBeDefined();
  }
});
