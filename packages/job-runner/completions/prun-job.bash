# bash completion for prun-job (generated from its declaration)
_prun_job() {
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
        "run|--profile"|"run|--name"|"run|--timeout"|"run|--model"|"run|--thinking"|"run|--cwd"|"resume|--timeout"|"wait|--timeout"|"peek|-n") expect="$w" ;;
      esac
      continue
    fi
    if [[ $n == 0 ]]; then
      case "$p|$w" in
        "|run") p='run'; continue ;;
        "|resume") p='resume'; continue ;;
        "|wait") p='wait'; continue ;;
        "|result") p='result'; continue ;;
        "|steer") p='steer'; continue ;;
        "|abort") p='abort'; continue ;;
        "|kill") p='kill'; continue ;;
        "|status") p='status'; continue ;;
        "|peek") p='peek'; continue ;;
        "|list") p='list'; continue ;;
        "|profiles") p='profiles'; continue ;;
        "|rm") p='rm'; continue ;;
        "|completion") p='completion'; continue ;;
      esac
    fi
    n=$((n + 1))
  done
  COMPREPLY=()
  if [[ -z $expect && $dd == 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; cur="${cur#*=}"; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      "run|--cwd") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $dd == 1 ]]; then
    case "$p" in
    esac
    return 0
  fi
  if [[ $cur == -* ]]; then
    case "$p" in
      "") COMPREPLY+=($(compgen -W '--help --version' -- "$cur")) ;;
      "run") COMPREPLY+=($(compgen -W '--profile --name --background --timeout --fork --model --thinking --cwd --help' -- "$cur")) ;;
      "resume") COMPREPLY+=($(compgen -W '--background --timeout --help' -- "$cur")) ;;
      "wait") COMPREPLY+=($(compgen -W '--timeout --json --help' -- "$cur")) ;;
      "result") COMPREPLY+=($(compgen -W '--json --help' -- "$cur")) ;;
      "steer") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "abort") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "kill") COMPREPLY+=($(compgen -W '--all --help' -- "$cur")) ;;
      "status") COMPREPLY+=($(compgen -W '--json --help' -- "$cur")) ;;
      "peek") COMPREPLY+=($(compgen -W '-n --follow -f --help' -- "$cur")) ;;
      "list") COMPREPLY+=($(compgen -W '--all --json --help' -- "$cur")) ;;
      "profiles") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "rm") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
      "completion") COMPREPLY+=($(compgen -W '--help' -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $n == 0 ]]; then
    case "$p" in
      "") COMPREPLY+=($(compgen -W 'run resume wait result steer abort kill status peek list profiles rm completion' -- "$cur")) ;;
    esac
  fi
  case "$p|$n" in
    "resume|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "wait|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "result|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "steer|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "abort|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "kill|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "status|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "peek|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "rm|0") COMPREPLY+=($(compgen -W "$(prun-job __names 2>/dev/null)" -- "$cur")) ;;
    "completion|0") COMPREPLY+=($(compgen -W 'bash zsh fish' -- "$cur")) ;;
  esac
  return 0
}
complete -F _prun_job prun-job
