import { parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { jobNames } from '../jobs.js';
import type { Context } from './context.js';

/** Bash completion (zsh: after `autoload bashcompinit && bashcompinit`): commands, options, job names. */
export const BASH_COMPLETION = `_prun_job() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "run resume wait result steer abort kill status peek list profiles rm completion --help --version" -- "$cur"))
    return
  fi
  case "$cmd" in
    run) COMPREPLY=($(compgen -W "--profile --name --background --timeout --fork --model --thinking --cwd" -- "$cur")) ;;
    resume|wait|result|steer|abort|kill|status|peek|rm)
      if [ "$COMP_CWORD" -eq 2 ]; then
        COMPREPLY=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur"))
      fi ;;
  esac
}
complete -F _prun_job prun-job
`;

export async function cmdCompletion(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, [], []);
  if (args.positional.length !== 1 || !['bash', 'zsh'].includes(args.positional[0] as string)) {
    throw usageError('completion needs a shell: bash or zsh');
  }
  ctx.out(args.positional[0] === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${BASH_COMPLETION}` : BASH_COMPLETION);
  return EXIT_OK;
}

/** Job names of the current project, one a line, for shell completion. */
export async function cmdNames(_argv: string[], ctx: Context): Promise<number> {
  ctx.out(jobNames(ctx.env).map((name) => name + '\n').join(''));
  return EXIT_OK;
}
