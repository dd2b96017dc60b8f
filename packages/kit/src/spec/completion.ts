import type { BinSpec, CommandSpec, ValueKind } from './types.js';
import { versionOffered } from './parse.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/**
 * What completion needs to know about one command, flattened from the declaration. Every shell
 * script below walks the words typed so far with the same rules as the parser: a known
 * subcommand word (before any positional) descends, an option that takes a value swallows the
 * next word, `--` ends the options, anything else counts as a positional.
 */
interface Node {
  path: string;
  subs: Array<{ name: string; summary: string }>;
  options: Array<{ word: string; help: string }>;
  /** Option word → what its value completes to. */
  valued: Array<{ word: string; kind: ValueKind; choices: readonly string[] }>;
  positionals: Array<{ kind: ValueKind; choices: readonly string[] }>;
  /** The last positional takes any number of words. */
  variadic: boolean;
  dashDashCommand: boolean;
}

function flatten(spec: BinSpec): Node[] {
  const nodes: Node[] = [];
  const visit = (command: CommandSpec, path: string[]): void => {
    const options = (command.options ?? []).filter((option) => !option.hidden);
    const words = options.flatMap((option) => [
      { word: option.long, help: option.help },
      ...(option.short ? [{ word: option.short, help: option.help }] : []),
    ]);
    words.push({ word: '--help', help: 'show this help' });
    if (versionOffered(spec, path)) words.push({ word: '--version', help: 'print the version' });
    const positionals = command.positionals ?? [];
    const subs = (command.commands ?? []).filter((sub) => !sub.hidden);
    nodes.push({
      path: path.join(' '),
      subs: subs.map((sub) => ({ name: sub.name, summary: sub.summary })),
      options: words,
      valued: (command.options ?? []).flatMap((option) =>
        option.value
          ? [option.long, ...(option.short ? [option.short] : [])].map((word) => ({
              word,
              kind: option.value!.kind,
              choices: option.value!.choices ?? [],
            }))
          : [],
      ),
      // A positional's suggestions complete as its choices would; only the parser leaves them open.
      positionals: positionals.map((positional) =>
        positional.suggest ? { kind: 'choice' as const, choices: positional.suggest } : { kind: positional.kind, choices: positional.choices ?? [] },
      ),
      variadic: positionals.at(-1)?.arity === 'many',
      dashDashCommand: command.dashDash === 'command',
    });
    for (const sub of subs) visit(sub, [...path, sub.name]);
  };
  visit(spec, []);
  return nodes;
}

/** A shell function name for a bin: `prun-job` → `_prun_job`. */
function fnName(bin: string): string {
  return `_${bin.replace(/[^A-Za-z0-9]/g, '_')}`;
}

/** Single-quoted for every POSIX shell and for fish (no quote characters are declared). */
function q(text: string): string {
  if (/['\\]/.test(text)) throw new Error(`completion word with a quote or backslash: ${text}`);
  return `'${text}'`;
}

/**
 * A completion word with its description (an option's help, a command's summary) as one fish
 * single-quoted word: inside fish's
 * single quotes only `\'` and `\\` are escapes, so an apostrophe ("the job's answer") and a
 * backslash survive as typed.
 */
function fishQuoted(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** What each kind offers, in each shell, for the current word `$cur`. */
function valueAction(shell: Shell, kind: ValueKind, choices: readonly string[], jobNames: string | undefined): string | null {
  const bash = {
    file: 'compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur"))',
    dir: 'compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur"))',
    command: 'COMPREPLY+=($(compgen -c -- "$cur"))',
    choice: `COMPREPLY+=($(compgen -W ${q(choices.join(' '))} -- "$cur"))`,
    job: jobNames ? `COMPREPLY+=($(compgen -W "$(${jobNames} 2>/dev/null)" -- "$cur"))` : null,
  };
  const zsh = {
    file: '_files',
    dir: '_files -/',
    command: '_command_names -e',
    choice: `compadd -- ${choices.map(q).join(' ')}`,
    job: jobNames ? `compadd -- \${(f)"$(${jobNames} 2>/dev/null)"}` : null,
  };
  const fish = {
    file: '__fish_complete_path "$cur"',
    dir: '__fish_complete_directories "$cur"',
    command: 'complete -C "$cur"',
    choice: `printf '%s\\n' ${choices.map(q).join(' ')}`,
    job: jobNames ? `${jobNames} 2>/dev/null` : null,
  };
  const table = shell === 'bash' ? bash : shell === 'zsh' ? zsh : fish;
  switch (kind) {
    case 'file':
    case 'path':
      return table.file;
    case 'dir':
      return table.dir;
    case 'command':
      return table.command;
    case 'choice':
      return choices.length > 0 ? table.choice : null;
    case 'job-name':
      return table.job;
    default:
      return null;
  }
}

/** The case arms shared by the three scripts, as [pattern, body] pairs. */
function arms(spec: BinSpec, shell: Shell) {
  const nodes = flatten(spec);
  const key = (path: string, word: string) => `${path}|${word}`;
  const descend = nodes.flatMap((node) => node.subs.map((sub) => [key(node.path, sub.name), node.path === '' ? sub.name : `${node.path} ${sub.name}`] as const));
  const takesValue = nodes.flatMap((node) => node.valued.map((valued) => key(node.path, valued.word)));
  const values = nodes.flatMap((node) =>
    node.valued.flatMap((valued) => {
      const action = valueAction(shell, valued.kind, valued.choices, spec.jobNames);
      return action ? [[key(node.path, valued.word), action] as const] : [];
    }),
  );
  const optionWords = nodes.map((node) => [node.path, node.options] as const);
  const subWords = nodes.filter((node) => node.subs.length > 0).map((node) => [node.path, node.subs] as const);
  const positionals = nodes.flatMap((node) => {
    const exact = node.positionals.flatMap((positional, index) => {
      const action = valueAction(shell, positional.kind, positional.choices, spec.jobNames);
      return action ? [[key(node.path, String(index)), action, false] as const] : [];
    });
    const last = node.positionals.at(-1);
    const lastAction = last && node.variadic ? valueAction(shell, last.kind, last.choices, spec.jobNames) : null;
    return lastAction ? [...exact, [key(node.path, ''), lastAction, true] as const] : exact;
  });
  const dashDash = nodes.filter((node) => node.dashDashCommand).map((node) => node.path);
  return { descend, takesValue, values, optionWords, subWords, positionals, dashDash };
}

function bashScript(spec: BinSpec): string {
  const fn = fnName(spec.name);
  const a = arms(spec, 'bash');
  const dq = (text: string) => `"${text}"`;
  const lines = [
    `# bash completion for ${spec.name} (generated from its declaration)`,
    `${fn}() {`,
    '  local cur="${COMP_WORDS[COMP_CWORD]}" p="" n=0 dd=0 expect="" i w',
    '  [[ $cur == = ]] && cur=""',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    [[ $w == = ]] && continue',
    '    if [[ -n $expect ]]; then expect=""; continue; fi',
    '    if [[ $dd == 1 ]]; then n=$((n + 1)); continue; fi',
    '    if [[ $w == -- ]]; then dd=1; n=0; continue; fi',
    '    if [[ $w == -?* ]]; then',
    '      [[ $w == *=* ]] && continue',
    '      case "$p|$w" in',
    ...(a.takesValue.length > 0 ? [`        ${a.takesValue.map(dq).join('|')}) expect="$w" ;;`] : []),
    '      esac',
    '      continue',
    '    fi',
    '    if [[ $n == 0 ]]; then',
    '      case "$p|$w" in',
    ...a.descend.map(([pattern, path]) => `        ${dq(pattern)}) p=${q(path)}; continue ;;`),
    '      esac',
    '    fi',
    '    n=$((n + 1))',
    '  done',
    '  COMPREPLY=()',
    '  if [[ -z $expect && $dd == 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; cur="${cur#*=}"; fi',
    '  if [[ -n $expect ]]; then',
    '    case "$p|$expect" in',
    ...a.values.map(([pattern, action]) => `      ${dq(pattern)}) ${action} ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if [[ $dd == 1 ]]; then',
    '    case "$p" in',
    ...a.dashDash.map((path) => `      ${dq(path)}) if [[ $n == 0 ]]; then COMPREPLY+=($(compgen -c -- "$cur")); else compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")); fi ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if [[ $cur == -* ]]; then',
    '    case "$p" in',
    ...a.optionWords.map(([path, options]) => `      ${dq(path)}) COMPREPLY+=($(compgen -W ${q(options.map((o) => o.word).join(' '))} -- "$cur")) ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if [[ $n == 0 ]]; then',
    '    case "$p" in',
    ...a.subWords.map(([path, subs]) => `      ${dq(path)}) COMPREPLY+=($(compgen -W ${q(subs.map((s) => s.name).join(' '))} -- "$cur")) ;;`),
    '    esac',
    '  fi',
    '  case "$p|$n" in',
    ...a.positionals.map(([pattern, action, rest]) => `    ${dq(pattern)}${rest ? '*' : ''}) ${action} ;;`),
    '  esac',
    '  return 0',
    '}',
    `complete -F ${fn} ${spec.name}`,
  ];
  return `${lines.join('\n')}\n`;
}

function zshScript(spec: BinSpec): string {
  const fn = fnName(spec.name);
  const a = arms(spec, 'zsh');
  const dq = (text: string) => `"${text}"`;
  const lines = [
    `# zsh completion for ${spec.name} (generated from its declaration)`,
    `${fn}() {`,
    '  local cur="${words[CURRENT]}" p="" expect="" w',
    '  integer i n=0 dd=0',
    '  for (( i = 2; i < CURRENT; i++ )); do',
    '    w="${words[i]}"',
    '    if [[ -n $expect ]]; then expect=""; continue; fi',
    '    if (( dd )); then (( n++ )); continue; fi',
    '    if [[ $w == -- ]]; then dd=1; n=0; continue; fi',
    '    if [[ $w == -?* ]]; then',
    '      [[ $w == *=* ]] && continue',
    '      case "$p|$w" in',
    ...(a.takesValue.length > 0 ? [`        (${a.takesValue.map(dq).join('|')}) expect="$w" ;;`] : []),
    '      esac',
    '      continue',
    '    fi',
    '    if (( n == 0 )); then',
    '      case "$p|$w" in',
    ...a.descend.map(([pattern, path]) => `        (${dq(pattern)}) p=${q(path)}; continue ;;`),
    '      esac',
    '    fi',
    '    (( n++ ))',
    '  done',
    '  if [[ -z $expect && dd -eq 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; compset -P "*="; fi',
    '  if [[ -n $expect ]]; then',
    '    case "$p|$expect" in',
    ...a.values.map(([pattern, action]) => `      (${dq(pattern)}) ${action} ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if (( dd )); then',
    '    case "$p" in',
    ...a.dashDash.map((path) => `      (${dq(path)}) if (( n == 0 )); then _command_names -e; else _files; fi ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if [[ $cur == -* ]]; then',
    '    case "$p" in',
    ...a.optionWords.map(([path, options]) => `      (${dq(path)}) compadd -- ${options.map((o) => q(o.word)).join(' ')} ;;`),
    '    esac',
    '    return 0',
    '  fi',
    '  if (( n == 0 )); then',
    '    case "$p" in',
    ...a.subWords.map(([path, subs]) => `      (${dq(path)}) compadd -- ${subs.map((s) => q(s.name)).join(' ')} ;;`),
    '    esac',
    '  fi',
    '  case "$p|$n" in',
    ...a.positionals.map(([pattern, action, rest]) => `    (${dq(pattern)}${rest ? '*' : ''}) ${action} ;;`),
    '  esac',
    '  return 0',
    '}',
    `compdef ${fn} ${spec.name}`,
  ];
  return `${lines.join('\n')}\n`;
}

function fishScript(spec: BinSpec): string {
  const fn = `_${fnName(spec.name)}_complete`;
  const a = arms(spec, 'fish');
  const lines = [
    `# fish completion for ${spec.name} (generated from its declaration)`,
    `function ${fn}`,
    '    set -l tokens (commandline -opc)',
    '    set -l cur (commandline -ct)',
    '    set -l p ""',
    '    set -l expect ""',
    '    set -l n 0',
    '    set -l dd 0',
    '    for w in $tokens[2..-1]',
    '        if test -n "$expect"',
    '            set expect ""',
    '            continue',
    '        end',
    '        if test $dd = 1',
    '            set n (math $n + 1)',
    '            continue',
    '        end',
    '        if test "$w" = --',
    '            set dd 1',
    '            set n 0',
    '            continue',
    '        end',
    "        if string match -qr -- '^-.' \"$w\"",
    "            string match -q -- '*=*' \"$w\"; and continue",
    '            switch "$p|$w"',
    ...(a.takesValue.length > 0 ? [`                case ${a.takesValue.map(q).join(' ')}`, '                    set expect "$w"'] : []),
    '            end',
    '            continue',
    '        end',
    '        if test $n = 0',
    '            switch "$p|$w"',
    ...a.descend.flatMap(([pattern, path]) => [`                case ${q(pattern)}`, `                    set p ${q(path)}`, '                    continue']),
    '            end',
    '        end',
    '        set n (math $n + 1)',
    '    end',
    '    set -l prefix ""',
    "    if test -z \"$expect\"; and test $dd = 0; and string match -qr -- '^--[^=]+=' \"$cur\"",
    "        set expect (string replace -r -- '=.*' '' \"$cur\")",
    "        set prefix \"$expect=\"",
    "        set cur (string replace -r -- '^[^=]*=' '' \"$cur\")",
    '    end',
    '    if test -n "$expect"',
    '        switch "$p|$expect"',
    ...a.values.flatMap(([pattern, action]) => [`            case ${q(pattern)}`, `                for c in (${action}); printf '%s%s\\n' "$prefix" "$c"; end`]),
    '        end',
    '        return 0',
    '    end',
    '    if test $dd = 1',
    '        switch "$p"',
    ...a.dashDash.flatMap((path) => [`            case ${q(path)}`, '                if test $n = 0; complete -C "$cur"; else; __fish_complete_path "$cur"; end']),
    '        end',
    '        return 0',
    '    end',
    "    if string match -q -- '-*' \"$cur\"",
    '        switch "$p"',
    ...a.optionWords.flatMap(([path, options]) => [`            case ${q(path)}`, `                printf '%s\\n' ${options.map((o) => fishQuoted(`${o.word}\t${o.help}`)).join(' ')}`]),
    '        end',
    '        return 0',
    '    end',
    '    if test $n = 0',
    '        switch "$p"',
    ...a.subWords.flatMap(([path, subs]) => [`            case ${q(path)}`, `                printf '%s\\n' ${subs.map((s) => fishQuoted(`${s.name}\t${s.summary}`)).join(' ')}`]),
    '        end',
    '    end',
    '    switch "$p|$n"',
    ...a.positionals.flatMap(([pattern, action, rest]) => [`        case ${q(pattern)}${rest ? "'*'" : ''}`, `            ${action}`]),
    '    end',
    'end',
    `complete -c ${spec.name} -f -a '(${fn})'`,
  ];
  return `${lines.join('\n')}\n`;
}

/** The completion script of one bin for one shell; concatenate several for a family of bins. */
export function completionScript(spec: BinSpec, shell: Shell): string {
  return shell === 'bash' ? bashScript(spec) : shell === 'zsh' ? zshScript(spec) : fishScript(spec);
}
