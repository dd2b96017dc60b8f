# zsh completion for prun-job (generated from its declaration)
_prun_job() {
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
        ("run|--profile"|"run|--name"|"run|--timeout"|"run|--model"|"run|--thinking"|"run|--cwd"|"resume|--timeout"|"wait|--timeout"|"peek|-n") expect="$w" ;;
      esac
      continue
    fi
    if (( n == 0 )); then
      case "$p|$w" in
        ("|run") p='run'; continue ;;
        ("|resume") p='resume'; continue ;;
        ("|wait") p='wait'; continue ;;
        ("|result") p='result'; continue ;;
        ("|steer") p='steer'; continue ;;
        ("|abort") p='abort'; continue ;;
        ("|kill") p='kill'; continue ;;
        ("|status") p='status'; continue ;;
        ("|peek") p='peek'; continue ;;
        ("|list") p='list'; continue ;;
        ("|profiles") p='profiles'; continue ;;
        ("|rm") p='rm'; continue ;;
        ("|completion") p='completion'; continue ;;
      esac
    fi
    (( n++ ))
  done
  if [[ -z $expect && dd -eq 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; compset -P "*="; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      ("run|--cwd") _files -/ ;;
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
      ("") compadd -- '--help' '--version' ;;
      ("run") compadd -- '--profile' '--name' '--background' '--timeout' '--fork' '--model' '--thinking' '--cwd' '--help' ;;
      ("resume") compadd -- '--background' '--timeout' '--help' ;;
      ("wait") compadd -- '--timeout' '--json' '--help' ;;
      ("result") compadd -- '--json' '--help' ;;
      ("steer") compadd -- '--help' ;;
      ("abort") compadd -- '--help' ;;
      ("kill") compadd -- '--all' '--help' ;;
      ("status") compadd -- '--json' '--help' ;;
      ("peek") compadd -- '-n' '--follow' '-f' '--help' ;;
      ("list") compadd -- '--all' '--json' '--help' ;;
      ("profiles") compadd -- '--help' ;;
      ("rm") compadd -- '--help' ;;
      ("completion") compadd -- '--help' ;;
    esac
    return 0
  fi
  if (( n == 0 )); then
    case "$p" in
      ("") compadd -- 'run' 'resume' 'wait' 'result' 'steer' 'abort' 'kill' 'status' 'peek' 'list' 'profiles' 'rm' 'completion' ;;
    esac
  fi
  case "$p|$n" in
    ("resume|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("wait|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("result|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("steer|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("abort|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("kill|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("status|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("peek|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("rm|0") compadd -- ${(f)"$(prun-job __names 2>/dev/null)"} ;;
    ("completion|0") compadd -- 'bash' 'zsh' 'fish' ;;
  esac
  return 0
}
compdef _prun_job prun-job
