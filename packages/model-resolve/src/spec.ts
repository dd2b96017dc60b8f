// The declaration of prun-model-resolve: its parser, --help, completion and exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';
import { BIN_ENV_VAR, DEFAULT_BIN, EFFORT_ENV_VAR } from './index.js';

export const TIMEOUT_ENV_VAR = 'ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS';
export const DEFAULT_TIMEOUT_SECONDS = 60;

export const SPEC: BinSpec = {
  name: 'prun-model-resolve',
  summary: 'resolve a model template to the newest listed model of its family',
  usage: ['TEMPLATE [--listing FILE|-] [--json]'],
  description: `Prints the newest listed model of TEMPLATE's family, tier first (the template's tier, or
high when it has none, then high, then untiered), then the highest version. The template
is printed unchanged when it does not parse or nothing listed belongs to its family.

The listing is the output of \`agy models\` (the first word of each non-blank line).
Without --listing, prun-model-resolve runs \`$${BIN_ENV_VAR} models\` (default ${DEFAULT_BIN}) with a
timeout of $${TIMEOUT_ENV_VAR} seconds (default ${DEFAULT_TIMEOUT_SECONDS}).`,
  // The count is checked by the bin, so its messages can say "one TEMPLATE".
  positionals: [{ name: 'TEMPLATE', kind: 'string', arity: 'many' }],
  options: [
    { long: '--listing', value: { name: 'FILE', kind: 'file' }, help: 'read the listing from FILE, or from stdin when FILE is -' },
    { long: '--json', help: 'print {"template", "resolved", "pool", "effort"}' },
  ],
  env: [
    { name: BIN_ENV_VAR, help: 'the agy executable', default: DEFAULT_BIN },
    { name: TIMEOUT_ENV_VAR, help: 'seconds `agy models` may take', default: String(DEFAULT_TIMEOUT_SECONDS) },
    { name: EFFORT_ENV_VAR, help: 'the effort --json reports (default: the model tier, else high)' },
  ],
  exitCodes: [
    { code: 0, meaning: 'resolved (the slug, or the JSON document, is on stdout)' },
    {
      code: 2,
      meaning:
        'usage error (no or several TEMPLATEs, blank TEMPLATE, unknown option, `--listing` without a value, invalid `ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS`, blank `ANTIGRAVITY_DISPATCH_EFFORT` with `--json`)',
    },
    { code: 70, meaning: 'no listing: agy not found, not executable, failing, killed or timing out; `FILE` unreadable' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
