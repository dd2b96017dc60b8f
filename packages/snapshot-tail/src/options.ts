import { argparseSpecOf, parseLikeArgparse, usageLine } from '@prun/kit/spec';
import { z } from 'zod';
import { SPEC } from './spec.js';

export const BIN = SPEC.name;

export const USAGE = usageLine(SPEC);

/** What the user asked for, after argv parsing. Empty `--dest`/`--output` mean "not given". */
export interface SnapshotOptions {
  unit: string;
  dest?: string;
  output?: string;
  json: boolean;
}

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; options: SnapshotOptions };

/** A command-line mistake: exit 2 with the usage line and `error: <message>`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const NO_NUL = (what: string) =>
  z.string().refine((value) => !value.includes('\0'), { message: `argument ${what}: embedded null byte` });

const OptionsSchema = z.object({
  unit: NO_NUL('--unit'),
  dest: NO_NUL('--dest').optional(),
  output: NO_NUL('--output').optional(),
  json: z.boolean(),
});

const ARGPARSE = argparseSpecOf(SPEC);

/**
 * Parse argv the way the upstream argparse parser does (kit's shared argparse rules), in order:
 * `--help`/`--version` win when reached, `--dest` and `--output` exclude each other (even when
 * one is empty), the last of a repeated option wins, and `--unit` is required.
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const outcome = parseLikeArgparse(ARGPARSE, argv);
  if (outcome.kind === 'error') throw new UsageError(outcome.message);
  if (outcome.kind !== 'args') return outcome;
  const { values } = outcome;
  const dest = values.get('--dest');
  const output = values.get('--output');
  const parsed = OptionsSchema.safeParse({
    unit: values.get('--unit'),
    ...(dest ? { dest } : {}),
    ...(output ? { output } : {}),
    json: values.has('--json'),
  });
  if (!parsed.success) throw new UsageError(parsed.error.issues[0]?.message ?? 'invalid arguments');
  const { unit, json } = parsed.data;
  return {
    kind: 'run',
    options: {
      unit,
      json,
      ...(parsed.data.dest !== undefined ? { dest: parsed.data.dest } : {}),
      ...(parsed.data.output !== undefined ? { output: parsed.data.output } : {}),
    },
  };
}

const EnvSchema = z.object({
  XDG_STATE_HOME: z.string().optional(),
  HOME: z.string().optional(),
});

/** The environment settings snapshot-tail reads. Empty values count as unset. */
export interface SnapshotEnv {
  xdgStateHome?: string;
  home?: string;
}

export function parseEnv(env: NodeJS.ProcessEnv): SnapshotEnv {
  const parsed = EnvSchema.parse({ XDG_STATE_HOME: env.XDG_STATE_HOME, HOME: env.HOME });
  return {
    ...(parsed.XDG_STATE_HOME ? { xdgStateHome: parsed.XDG_STATE_HOME } : {}),
    ...(parsed.HOME ? { home: parsed.HOME } : {}),
  };
}
