// review11b (#11): Python's int() has one home, @prun/kit/py (pyInt over pyStrip). job-runner's
// checkDepth reads MULTI_AGENT_DEPTH / MULTI_AGENT_MAX_DEPTH with its own /^[+-]?\d+$/ after a JS
// trim(), so values Python's int() accepts ('1_0', '٣', ' 3\u2003') are read as unset here, and
// prun-job lets a caller start an agent that multi_agent.py refuses.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { checkDepth } from '../src/jobs.js';

const python3 = spawnSync('python3', ['-c', 'pass']).status === 0;

/** What multi_agent.py's caller_depth() makes of the value. */
function pythonDepth(value: string): number {
  const out = spawnSync('python3', ['-c', 'import os\ntry:\n print(int(os.environ.get("D") or 0))\nexcept ValueError:\n print(0)'], {
    env: { ...process.env, D: value },
    encoding: 'utf8',
  });
  return Number(out.stdout.trim());
}

describe('checkDepth reads the depth as Python int() does (review11b)', () => {
  for (const value of ['1_0', '\u0663', ' 3\u2003']) {
    it.skipIf(!python3)(`MULTI_AGENT_DEPTH=${JSON.stringify(value)} is the depth python3 reads${python3 ? '' : ' (skipped: python3 is missing)'}`, () => {
      const depth = pythonDepth(value);
      expect(depth).toBeGreaterThanOrEqual(2);
      expect(() => checkDepth({ MULTI_AGENT_DEPTH: value })).toThrow(`this caller is at depth ${depth} and MULTI_AGENT_MAX_DEPTH is 2`);
    });
  }
});
