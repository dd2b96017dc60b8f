# bash completion for prun (generated from its declaration)
_prun() {
  local cur="${COMP_WORDS[COMP_CWORD]}" p="" n=0 dd=0 expect="" i w
  [[ $cur == = ]] && cur=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    [[ $w == = ]] && continue
    if [[ -n $expect ]]; then expect=""; continue; fi
    if [[ $dd == 1 ]]; then n=$((n + 1)); continue; fi
    if [[ $w == -- ]]; then dd=1; n=0; continue; fi
    if [[ $w == -?* ]]; then
      [[ $w == *=* ]] && continue
      case "$p|$w" in
        "batch|--dir"|"batch|--jobs"|"batch|--quota-wait"|"batch|--resume"|"batch|--retry-failed"|"batch|--retries"|"batch|--halt"|"batch|--on-unit-done"|"dispatch|--prompt-file"|"dispatch|--result-file"|"dispatch|--unit-id"|"dispatch|--mode"|"dispatch|--add-dir"|"dispatch|--continue-from"|"report-state|--root"|"report-state|--batch"|"report-state|--sort"|"report-state|--min-tail-bytes"|"snapshot-tail|--unit"|"snapshot-tail|--dest"|"snapshot-tail|--output"|"quota route|--model"|"models|--listing"|"env|--keep"|"job run|--profile"|"job run|--name"|"job run|--timeout"|"job run|--model"|"job run|--thinking"|"job run|--cwd"|"job resume|--timeout"|"job wait|--timeout"|"job peek|-n") expect="$w" ;;
      esac
      continue
    fi
    if [[ $n == 0 ]]; then
      case "$p|$w" in
        "|batch") p='batch'; continue ;;
        "|cancel") p='cancel'; continue ;;
        "|status") p='status'; continue ;;
        "|wait") p='wait'; continue ;;
        "|log") p='log'; continue ;;
        "|clean") p='clean'; continue ;;
        "|clone") p='clone'; continue ;;
        "|completion") p='completion'; continue ;;
        "|help") p='help'; continue ;;
        "|dispatch") p='dispatch'; continue ;;
        "|monitor") p='monitor'; continue ;;
        "|gather") p='gather'; continue ;;
        "|report-state") p='report-state'; continue ;;
        "|snapshot-tail") p='snapshot-tail'; continue ;;
        "|quota") p='quota'; continue ;;
        "|models") p='models'; continue ;;
        "|env") p='env'; continue ;;
        "|job") p='job'; continue ;;
        "quota|refresh") p='quota refresh'; continue ;;
        "quota|route") p='quota route'; continue ;;
        "job|run") p='job run'; continue ;;
        "job|resume") p='job resume'; continue ;;
        "job|wait") p='job wait'; continue ;;
        "job|result") p='job result'; continue ;;
        "job|steer") p='job steer'; continue ;;
        "job|abort") p='job abort'; continue ;;
        "job|kill") p='job kill'; continue ;;
        "job|status") p='job status'; continue ;;
        "job|peek") p='job peek'; continue ;;
        "job|list") p='job list'; continue ;;
        "job|profiles") p='job profiles'; continue ;;
        "job|rm") p='job rm'; continue ;;
        "job|completion") p='job completion'; continue ;;
      esac
    fi
    n=$((n + 1))
  done
  COMPREPLY=()
  if [[ -z $expect && $dd == 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; cur="${cur#*=}"; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      "batch|--dir") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "batch|--resume") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "batch|--retry-failed") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "batch|--on-unit-done") COMPREPLY+=($(compgen -c -- "$cur")) ;;
      "dispatch|--prompt-file") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "dispatch|--result-file") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "dispatch|--mode") COMPREPLY+=($(compgen -W 'plan accept-edits' -- "$cur")) ;;
      "dispatch|--add-dir") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "dispatch|--continue-from") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "report-state|--root") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "report-state|--batch") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "report-state|--sort") COMPREPLY+=($(compgen -W 'path tail-bytes-desc' -- "$cur")) ;;
      "snapshot-tail|--unit") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "snapshot-tail|--dest") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "snapshot-tail|--output") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "models|--listing") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "job run|--cwd") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $dd == 1 ]]; then
    case "$p" in
      "env") if [[ $n == 0 ]]; then COMPREPLY+=($(compgen -c -- "$cur")); else compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")); fi ;;
    esac
    return 0
  fi
  if [[ $cur == -* ]]; then
    case "$p" in
      "") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "batch") COMPREPLY+=($(compgen -W '--dir --jobs --json --no-quota-wait --quota-wait --resume --retry-failed --dry-run --retries --halt --on-unit-done --help --version' -- "$cur")) ;;
      "cancel") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "status") COMPREPLY+=($(compgen -W '--json --watch --help --version' -- "$cur")) ;;
      "wait") COMPREPLY+=($(compgen -W '--json --help --version' -- "$cur")) ;;
      "log") COMPREPLY+=($(compgen -W '--follow -f --raw --help --version' -- "$cur")) ;;
      "clean") COMPREPLY+=($(compgen -W '--dry-run --snapshot --clones --json --help --version' -- "$cur")) ;;
      "clone") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "completion") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "help") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "dispatch") COMPREPLY+=($(compgen -W '--prompt-file --result-file --unit-id --mode --add-dir --continue-from --help --version' -- "$cur")) ;;
      "monitor") COMPREPLY+=($(compgen -W '--json --help --version' -- "$cur")) ;;
      "gather") COMPREPLY+=($(compgen -W '--json --help --version' -- "$cur")) ;;
      "report-state") COMPREPLY+=($(compgen -W '--root --batch --json --summary --sort --min-tail-bytes --include-legacy-pid --help --version' -- "$cur")) ;;
      "snapshot-tail") COMPREPLY+=($(compgen -W '--unit --dest --output --json --help --version' -- "$cur")) ;;
      "quota") COMPREPLY+=($(compgen -W '--json --no-refresh --help --version' -- "$cur")) ;;
      "quota refresh") COMPREPLY+=($(compgen -W '--json --force --help --version' -- "$cur")) ;;
      "quota route") COMPREPLY+=($(compgen -W '--json --model --help --version' -- "$cur")) ;;
      "models") COMPREPLY+=($(compgen -W '--listing --json --help --version' -- "$cur")) ;;
      "env") COMPREPLY+=($(compgen -W '--keep --list --json --help --version' -- "$cur")) ;;
      "job") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "job run") COMPREPLY+=($(compgen -W '--profile --name --background --timeout --fork --model --thinking --cwd --help' -- "$cur")) ;;
      "job resume") COMPREPLY+=($(compgen -W '--background --timeout --help' -- "$cur")) ;;
      "job wait") COMPREPLY+=($(compgen -W '--timeout --json --help' -- "$cur")) ;;
      "job result") COMPREPLY+=($(compgen -W '--json --help' -- "$cur")) ;;
      "job steer") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "job abort") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "job kill") COMPREPLY+=($(compgen -W '--all --help' -- "$cur")) ;;
      "job status") COMPREPLY+=($(compgen -W '--json --help' -- "$cur")) ;;
      "job peek") COMPREPLY+=($(compgen -W '-n --follow -f --help' -- "$cur")) ;;
      "job list") COMPREPLY+=($(compgen -W '--all --json --help' -- "$cur")) ;;
      "job profiles") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "job rm") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "job completion") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $n == 0 ]]; then
    case "$p" in
      "") COMPREPLY+=($(compgen -W 'batch cancel status wait log clean clone completion help dispatch monitor gather report-state snapshot-tail quota models env job' -- "$cur")) ;;
      "quota") COMPREPLY+=($(compgen -W 'refresh route' -- "$cur")) ;;
      "job") COMPREPLY+=($(compgen -W 'run resume wait result steer abort kill status peek list profiles rm completion' -- "$cur")) ;;
    esac
  fi
  case "$p|$n" in
    "batch|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
    "cancel|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "status|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "wait|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "log|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "clean|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "clone|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "clone|1") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
    "completion|0") COMPREPLY+=($(compgen -W 'bash zsh fish' -- "$cur")) ;;
    "help|0") COMPREPLY+=($(compgen -W 'batch cancel status wait log clean clone completion help dispatch monitor gather report-state snapshot-tail quota models env job' -- "$cur")) ;;
    "monitor|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "monitor|"*) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    "gather|0") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
    "gather|"*) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
    "job resume|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job wait|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job result|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job steer|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job abort|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job kill|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job status|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job peek|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job rm|0") COMPREPLY+=($(compgen -W "$(prun job __names 2>/dev/null)" -- "$cur")) ;;
    "job completion|0") COMPREPLY+=($(compgen -W 'bash zsh fish' -- "$cur")) ;;
  esac
  return 0
}
complete -F _prun prun
