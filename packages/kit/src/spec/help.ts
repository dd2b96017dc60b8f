import { packageVersion } from '../cli/index.js';
import { commandAt, versionOffered } from './parse.js';
import type { BinSpec, CommandSpec, ExitCodeSpec, OptionSpec, PositionalSpec } from './types.js';

const WIDTH = 92;

/** Greedy word wrap; the first line goes after `lead`, the rest are indented by `indent`. */
function wrap(text: string, indent: number, firstWidth: number): string {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      const limit = lines.length === 0 ? firstWidth : WIDTH - indent;
      if (line !== '' && line.length + 1 + word.length > limit) {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    lines.push(line);
  }
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** Two columns: a left cell padded to the widest (capped), the right wrapped beside it. */
function table(rows: ReadonlyArray<readonly [string, string]>, cap = 28): string[] {
  const width = Math.min(cap, Math.max(0, ...rows.map(([left]) => left.length)));
  return rows.map(([left, right]) => {
    const indent = 2 + width + 2;
    right = plainText(right);
    if (right === '') return `  ${left}`;
    if (left.length > width) return `  ${left}\n${' '.repeat(indent)}${wrap(right, indent, WIDTH - indent)}`;
    return `  ${left.padEnd(width)}  ${wrap(right, indent, WIDTH - indent)}`;
  });
}

/** `-n, --count N`; a choice shows its words, argparse-style as `{a,b}`. */
export function optionLabel(option: OptionSpec, argparse = false): string {
  const names = option.short ? `${option.short}, ${option.long}` : option.long;
  const choices = option.value?.kind === 'choice' ? option.value.choices : undefined;
  const shown = choices ? (argparse ? `{${choices.join(',')}}` : choices.join('|')) : option.value?.name;
  const value = option.value ? ` ${shown}` : '';
  return `${names}${value}`;
}

function positionalLabel(positional: PositionalSpec): string {
  const arity = positional.arity ?? 'one';
  if (arity === 'optional') return `[${positional.name}]`;
  if (arity === 'many') return (positional.min ?? 0) > 0 ? `${positional.name}...` : `[${positional.name}...]`;
  return positional.name;
}

/** Markdown backticks read well in a table and badly in a terminal. */
export function plainText(text: string): string {
  return text.replace(/`/g, '');
}

function generatedUsage(command: CommandSpec): string {
  const parts: string[] = [];
  const visible = (command.options ?? []).filter((option) => !option.hidden);
  if (visible.length > 0) parts.push('[options]');
  if (command.commands?.some((sub) => !sub.hidden)) parts.push('<command> [args...]');
  for (const positional of command.positionals ?? []) parts.push(positionalLabel(positional));
  return parts.join(' ');
}

export function exitCodeRows(codes: readonly ExitCodeSpec[]): Array<readonly [string, string]> {
  return codes.map((entry) => [String(entry.code), plainText(entry.meaning)] as const);
}

/**
 * The `--help` text of the bin, or of the subcommand at `path`: usage, prose, commands,
 * options (with `-h/--help` and `--version`), environment, epilog, exit codes.
 */
export function renderHelp(spec: BinSpec, path: readonly string[] = []): string {
  const command = commandAt(spec, path) ?? spec;
  const argparse = spec.helpStyle === 'argparse';
  const heading = (title: string): string => (argparse ? `${title.toLowerCase()}:` : `${title}:`);
  const prefix = [spec.name, ...path].join(' ');
  const usageLines = (command.usage ?? [generatedUsage(command)]).map((line) => (line === '' ? prefix : `${prefix} ${line}`));
  const usageWord = argparse ? 'usage:' : 'Usage:';
  const sections: string[] = [];
  sections.push(usageLines.length === 1 ? `${usageWord} ${usageLines[0]}` : `${usageWord}\n${usageLines.map((line) => `  ${line}`).join('\n')}`);
  const prose = path.length > 0 ? [command.summary, command.description].filter(Boolean).join('\n\n') : (command.description ?? command.summary);
  if (prose) sections.push(wrap(prose, 0, WIDTH));

  const subs = (command.commands ?? []).filter((sub) => !sub.hidden);
  if (subs.length > 0) sections.push([heading('Commands'), ...table(subs.map((sub) => [sub.name, sub.summary]), 16)].join('\n'));

  const rows: Array<readonly [string, string]> = (command.options ?? [])
    .filter((option) => !option.hidden)
    
    .map((option) => [optionLabel(option, argparse), option.default !== undefined ? `${option.help} (default: ${option.default})` : option.help]);
  rows.push(['-h, --help', 'show this help']);
  if (versionOffered(spec, path)) rows.push(['--version', 'print the version']);
  sections.push([heading('Options'), ...table(rows)].join('\n'));

  const env = command.env ?? [];
  if (env.length > 0) {
    sections.push(
      [heading('Environment'), ...table(env.map((entry) => [entry.name, entry.default !== undefined ? `${entry.help} (default: ${entry.default})` : entry.help]), 38)].join('\n'),
    );
  }
  if (command.epilog) sections.push(wrap(command.epilog, 0, WIDTH));
  const codes = command.exitCodes ?? spec.exitCodes;
  sections.push([heading('Exit codes'), ...table(exitCodeRows(codes), 8)].join('\n'));
  return `${sections.join('\n\n')}\n`;
}

/** The one usage line a usage error may print under its message. */
export function usageLine(spec: BinSpec, path: readonly string[] = []): string {
  const command = commandAt(spec, path) ?? spec;
  const prefix = [spec.name, ...path].join(' ');
  const first = command.usage?.[0] ?? generatedUsage(command);
  return `${spec.helpStyle === 'argparse' ? 'usage:' : 'Usage:'} ${first === '' ? prefix : `${prefix} ${first}`}`;
}

/**
 * Prints on stdout what a `help` or `version` parse asks for: the help of the command at its
 * `path`, or the version in the package manifest. Returns whether it was one of those (the
 * command is then done, exit 0); every bin's main starts with it.
 */
export function answerHelpOrVersion(spec: BinSpec, parsed: { kind: string; path?: readonly string[] }, manifest: URL | string): boolean {
  if (parsed.kind === 'help') process.stdout.write(renderHelp(spec, parsed.path ?? []));
  else if (parsed.kind === 'version') process.stdout.write(`${packageVersion(manifest)}\n`);
  else return false;
  return true;
}
