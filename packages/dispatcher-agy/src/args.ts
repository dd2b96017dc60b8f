/**
 * Command-line parsing with argparse's rules, because coordinators already call the original
 * with argparse spellings: any unambiguous prefix of a long option, `--opt=value`, the last
 * value winning except for the accumulating `--add-dir`.
 */

export const MODES = ['plan', 'accept-edits'] as const;
export type Mode = (typeof MODES)[number];

export interface ParsedArgs {
  promptFile: string;
  resultFile: string;
  unitId: string;
  mode: Mode | null;
  addDirs: string[];
  continueFrom: string | null;
}

export type ArgsOutcome =
  | { kind: 'args'; args: ParsedArgs }
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'error'; message: string };

type OptionName = 'prompt-file' | 'result-file' | 'unit-id' | 'mode' | 'add-dir' | 'continue-from' | 'help' | 'version';

const OPTIONS: readonly { name: OptionName; takesValue: boolean }[] = [
  { name: 'prompt-file', takesValue: true },
  { name: 'result-file', takesValue: true },
  { name: 'unit-id', takesValue: true },
  { name: 'mode', takesValue: true },
  { name: 'add-dir', takesValue: true },
  { name: 'continue-from', takesValue: true },
  { name: 'help', takesValue: false },
  { name: 'version', takesValue: false },
];

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/**
 * Whether argparse would read this token as an option rather than as a value (its
 * `_parse_optional`): a token naming an option (exactly, by prefix, or before an `=`) is one;
 * otherwise negative numbers and anything with a space are values, even after `--`.
 */
function looksLikeOption(token: string): boolean {
  if (!token.startsWith('-') || token === '-') return false;
  if (token.startsWith('--')) {
    const eq = token.indexOf('=');
    const flag = eq >= 0 ? token.slice(0, eq) : token;
    if (OPTIONS.some((o) => `--${o.name}`.startsWith(flag))) return true;
  } else if (token.startsWith('-h')) {
    return true;
  }
  if (NEGATIVE_NUMBER.test(token)) return false;
  return !token.includes(' ');
}

function matchOption(flag: string): { name: OptionName; takesValue: boolean } | string {
  const exact = OPTIONS.find((o) => `--${o.name}` === flag);
  if (exact) return exact;
  const matches = OPTIONS.filter((o) => `--${o.name}`.startsWith(flag));
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    return `ambiguous option: ${flag} could match ${matches.map((m) => `--${m.name}`).join(', ')}`;
  }
  return `unrecognized arguments: ${flag}`;
}

export function parseArgs(argv: readonly string[]): ArgsOutcome {
  const values = new Map<OptionName, string>();
  const addDirs: string[] = [];
  const unrecognized: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const token = argv[i]!;
    // argparse acts on --help (and a version action) the moment it meets it: an error in a
    // later option is never reached.
    if (token === '-h') return { kind: 'help' };
    if (token === '--') {
      unrecognized.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('--') || token.length === 2) {
      unrecognized.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq >= 0 ? token.slice(0, eq) : token;
    const match = matchOption(flag);
    if (typeof match === 'string') {
      if (match.startsWith('ambiguous')) return { kind: 'error', message: match };
      unrecognized.push(token);
      continue;
    }
    let value: string | undefined;
    if (!match.takesValue) {
      if (eq >= 0) return { kind: 'error', message: `argument --${match.name}: ignored explicit argument '${token.slice(eq + 1)}'` };
    } else if (eq >= 0) {
      value = token.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || looksLikeOption(next)) {
        return { kind: 'error', message: `argument --${match.name}: expected one argument` };
      }
      value = next;
      i += 1;
    }
    if (match.name === 'help') return { kind: 'help' };
    if (match.name === 'version') return { kind: 'version' };
    if (match.name === 'add-dir') addDirs.push(value!);
    else if (match.name === 'mode') {
      if (!(MODES as readonly string[]).includes(value!)) {
        return {
          kind: 'error',
          message: `argument --mode: invalid choice: '${value}' (choose from ${MODES.map((m) => `'${m}'`).join(', ')})`,
        };
      }
      values.set('mode', value!);
    } else values.set(match.name, value!);
  }
  const missing = (['prompt-file', 'result-file', 'unit-id'] as const).filter((name) => !values.has(name));
  if (missing.length > 0) {
    return { kind: 'error', message: `the following arguments are required: ${missing.map((m) => `--${m}`).join(', ')}` };
  }
  if (unrecognized.length > 0) return { kind: 'error', message: `unrecognized arguments: ${unrecognized.join(' ')}` };
  return {
    kind: 'args',
    args: {
      promptFile: values.get('prompt-file')!,
      resultFile: values.get('result-file')!,
      unitId: values.get('unit-id')!,
      mode: (values.get('mode') as Mode | undefined) ?? null,
      addDirs,
      continueFrom: values.get('continue-from') ?? null,
    },
  };
}
