# bash completion for prun-quota (generated from its declaration)
_prun_quota() {
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
        "route|--model") expect="$w" ;;
      esac
      continue
    fi
    if [[ $n == 0 ]]; then
      case "$p|$w" in
        "|refresh") p='refresh'; continue ;;
        "|route") p='route'; continue ;;
      esac
    fi
    n=$((n + 1))
  done
  COMPREPLY=()
  if [[ -z $expect && $dd == 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; cur="${cur#*=}"; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
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
      "") COMPREPLY+=($(compgen -W '--json --no-refresh --help --version' -- "$cur")) ;;
      "refresh") COMPREPLY+=($(compgen -W '--json --force --help --version' -- "$cur")) ;;
      "route") COMPREPLY+=($(compgen -W '--json --model --help --version' -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $n == 0 ]]; then
    case "$p" in
      "") COMPREPLY+=($(compgen -W 'refresh route' -- "$cur")) ;;
    esac
  fi
  case "$p|$n" in
  esac
  return 0
}
complete -F _prun_quota prun-quota
