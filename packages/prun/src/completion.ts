import { OWN_COMMANDS, TOOL_COMMANDS } from './commands.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

const commands = [...OWN_COMMANDS.map((c) => c.name), ...TOOL_COMMANDS.map((c) => c.name), 'help'];
const optionsOf = (name: string): string[] =>
  [...OWN_COMMANDS, ...TOOL_COMMANDS].find((command) => command.name === name)?.options.slice() ?? [];

// Job names come from `prun job list --all`: its first column, below the header row.
const JOB_NAMES = "prun job list --all 2>/dev/null | awk 'NR>1 {print $1}'";
const JOB_NAME_VERBS = ['resume', 'wait', 'result', 'steer', 'abort', 'kill', 'status', 'peek', 'rm'];

function bash(): string {
  const cases = commands
    .filter((name) => optionsOf(name).length > 0)
    .map((name) => `    ${name}) opts="${optionsOf(name).join(' ')}" ;;`)
    .join('\n');
  return `# prun completion for bash: eval "$(prun completion bash)"
_prun() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands.join(' ')}" -- "$cur"))
    return
  fi
  local cmd=\${COMP_WORDS[1]} opts=""
  if [ "$cmd" = job ] && [ "$COMP_CWORD" -eq 3 ]; then
    case "\${COMP_WORDS[2]}" in
      ${JOB_NAME_VERBS.join('|')}) COMPREPLY=($(compgen -W "$(${JOB_NAMES})" -- "$cur")); return ;;
    esac
  fi
  case "$cmd" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  [ \${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o default -F _prun prun
`;
}

function zsh(): string {
  const cases = commands
    .filter((name) => optionsOf(name).length > 0)
    .map((name) => `    ${name}) compadd -- ${optionsOf(name).join(' ')} ;;`)
    .join('\n');
  return `#compdef prun
# prun completion for zsh: eval "$(prun completion zsh)" (after compinit)
_prun() {
  if (( CURRENT == 2 )); then
    compadd -- ${commands.join(' ')}
    return
  fi
  if [[ $words[2] == job && CURRENT -eq 4 ]]; then
    case $words[3] in
      ${JOB_NAME_VERBS.join('|')}) compadd -- \${(f)"$(${JOB_NAMES})"}; return ;;
    esac
  fi
  case $words[2] in
${cases}
  esac
  _files
}
compdef _prun prun
`;
}

function fish(): string {
  const lines = [
    '# prun completion for fish: prun completion fish | source',
    'complete -c prun -f',
    `complete -c prun -n '__fish_use_subcommand' -a '${commands.join(' ')}'`,
  ];
  for (const name of commands) {
    const opts = optionsOf(name);
    if (opts.length > 0) lines.push(`complete -c prun -n '__fish_seen_subcommand_from ${name}' -a '${opts.join(' ')}'`);
  }
  lines.push(
    `complete -c prun -n '__fish_seen_subcommand_from ${JOB_NAME_VERBS.join(' ')}; and __fish_seen_subcommand_from job' -a '(${JOB_NAMES})'`,
  );
  return `${lines.join('\n')}\n`;
}

export function completionScript(shell: Shell): string {
  return shell === 'bash' ? bash() : shell === 'zsh' ? zsh() : fish();
}
