# zsh completion for prun-report-state (generated from its declaration)
_prun_report_state() {
  local cur="${words[CURRENT]}" p="" expect="" w
  integer i n=0 dd=0
  for (( i = 2; i < CURRENT; i++ )); do
    w="${words[i]}"
    if [[ -n $expect ]]; then expect=""; continue; fi
    if (( dd )); then (( n++ )); continue; fi
    if [[ $w == -- ]]; then dd=1; n=0; continue; fi
    if [[ $w == -?* ]]; then
      [[ $w == *=* ]] && continue
      case "$p|$w" in
        ("|--root"|"|--batch"|"|--sort"|"|--min-tail-bytes") expect="$w" ;;
      esac
      continue
    fi
    if (( n == 0 )); then
      case "$p|$w" in
      esac
    fi
    (( n++ ))
  done
  if [[ -z $expect && dd -eq 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; compset -P "*="; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      ("|--root") _files -/ ;;
      ("|--batch") _files -/ ;;
      ("|--sort") compadd -- 'path' 'tail-bytes-desc' ;;
    esac
    return 0
  fi
  if (( dd )); then
    case "$p" in
    esac
    return 0
  fi
  if [[ $cur == -* ]]; then
    case "$p" in
      ("") compadd -- '--root' '--batch' '--json' '--summary' '--sort' '--min-tail-bytes' '--include-legacy-pid' '--help' '--version' ;;
    esac
    return 0
  fi
  if (( n == 0 )); then
    case "$p" in
    esac
  fi
  case "$p|$n" in
  esac
  return 0
}
compdef _prun_report_state prun-report-state
