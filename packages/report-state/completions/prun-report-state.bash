# bash completion for prun-report-state (generated from its declaration)
_prun_report_state() {
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
        "|--root"|"|--batch"|"|--sort"|"|--min-tail-bytes") expect="$w" ;;
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
      "|--root") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "|--batch") compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
      "|--sort") COMPREPLY+=($(compgen -W 'path tail-bytes-desc' -- "$cur")) ;;
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
      "") COMPREPLY+=($(compgen -W '--root --batch --json --summary --sort --min-tail-bytes --include-legacy-pid --help --version' -- "$cur")) ;;
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
complete -F _prun_report_state prun-report-state
