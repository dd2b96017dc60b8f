# bash completion for prun-dispatch-agy (generated from its declaration)
_prun_dispatch_agy() {
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
        "|--prompt-file"|"|--result-file"|"|--unit-id"|"|--mode"|"|--add-dir"|"|--continue-from") expect="$w" ;;
      esac
      continue
    fi
    if [[ $n == 0 ]]; then
      case "$p|$w" in
      esac
    fi
    n=$((n + 1))
  done
  COMPREPLY=()
  if [[ -z $expect && $dd == 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; cur="${cur#*=}"; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      "|--prompt-file") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "|--result-file") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
      "|--mode") COMPREPLY+=($(compgen -W 'plan accept-edits' -- "$cur")) ;;
      "|--add-dir") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "|--continue-from") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
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
      "") COMPREPLY+=($(compgen -W '--prompt-file --result-file --unit-id --mode --add-dir --continue-from --help --version' -- "$cur")) ;;
    esac
    return 0
  fi
  if [[ $n == 0 ]]; then
    case "$p" in
    esac
  fi
  case "$p|$n" in
  esac
  return 0
}
complete -F _prun_dispatch_agy prun-dispatch-agy
