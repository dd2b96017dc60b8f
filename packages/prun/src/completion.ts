import { completionScript as scriptOf, type Shell } from '@prun/kit/spec';
import { fullSpec, toolSpecs } from './spec.js';

export { SHELLS } from './spec.js';
export type { Shell } from '@prun/kit/spec';

/**
 * `prun completion SHELL`: prun's own script (every fronted bin nested under its command, so
 * `prun job run --<TAB>` offers prun-job's run options), then each prun-* bin's own script.
 */
export async function completionScript(shell: Shell): Promise<string> {
  const scripts = [scriptOf(await fullSpec(), shell)];
  const seen = new Set<string>();
  for (const { spec } of await toolSpecs()) {
    if (seen.has(spec.name)) continue;
    seen.add(spec.name);
    scripts.push(scriptOf(spec, shell));
  }
  return scripts.join('\n');
}
