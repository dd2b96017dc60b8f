// The declaration of prun-quota: its parser, --help, completion and exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';
import { DEFAULT_MODEL } from './models.js';
import { QUOTA_EXHAUSTED_EXIT } from './route.js';

const JSON_OPTION = { long: '--json', help: 'one JSON document instead of text' } as const;

export const SPEC: BinSpec = {
  name: 'prun-quota',
  summary: 'quota readout, refresh, and the routing decision for a model',
  usage: [
    '[--json] [--no-refresh]       readout of both Agy quota groups',
    'refresh [--force] [--json]    query agy /usage and rewrite the snapshot',
    'route [--model M] [--json]    the model a unit would run on, or why it may not start',
  ],
  // One source line per paragraph: --help wraps each line to its width, so a line broken here by
  // hand would be broken twice.
  description: [
    'The snapshot is $AGY_QUOTA_CACHE, else ~/.claude/agy-quota-cache.json.',
    `route: --model M (or a non-blank ANTIGRAVITY_DISPATCH_MODEL) names a pinned model; without one the unit is unpinned and starts from ${DEFAULT_MODEL}. The model to run is the only stdout line; a MODEL-BALANCE/MODEL-FALLBACK note goes to stderr.`,
    'The readout starts a background refresh when the snapshot is older than the TTL (unless --no-refresh).',
  ].join('\n'),
  refuseRepeats: true,
  options: [JSON_OPTION, { long: '--no-refresh', help: 'do not start a background refresh of a stale snapshot' }],
  commands: [
    {
      name: 'refresh',
      summary: 'query agy /usage and rewrite the snapshot',
      usage: ['[--force] [--json]'],
      refuseRepeats: true,
      options: [JSON_OPTION, { long: '--force', help: 'refresh even within the TTL' }],
    },
    {
      name: 'route',
      summary: 'the model a unit would run on, or why it may not start',
      usage: ['[--model M] [--json]'],
      refuseRepeats: true,
      options: [JSON_OPTION, { long: '--model', value: { name: 'M', kind: 'string' }, help: 'the pinned model (default: ANTIGRAVITY_DISPATCH_MODEL)' }],
    },
  ],
  env: [
    { name: 'AGY_QUOTA_CACHE', help: 'the quota snapshot file', default: '~/.claude/agy-quota-cache.json' },
    { name: 'AGY_QUOTA_TTL_SECONDS', help: 'a snapshot younger than this is fresh', default: '300' },
    { name: 'AGY_QUOTA_TIMEOUT_SECONDS', help: 'how long `agy -p /usage` may take', default: '30' },
    { name: 'ANTIGRAVITY_BIN', help: 'the agy executable', default: 'agy' },
    { name: 'ANTIGRAVITY_DISPATCH_MODEL', help: 'route: the pinned model when --model is absent' },
    { name: 'PRUN_AGY_QUOTA_GATE', help: '0/off/false/disabled/no turns routing off' },
  ],
  exitCodes: [
    { code: 0, meaning: 'done (readout printed; refresh written or skipped by TTL, marker or lock; route may run)' },
    { code: 1, meaning: 'refresh failed (no agy, launch error, timeout, non-zero exit, bad `/usage` answer, write error)' },
    { code: 2, meaning: 'usage error (one line naming the option)' },
    { code: 70, meaning: 'internal error' },
    { code: QUOTA_EXHAUSTED_EXIT, meaning: '`route`: blocked, the group(s) the unit needs are exhausted' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
