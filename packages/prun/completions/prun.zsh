# zsh completion for prun (generated from its declaration)
_prun() {
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
        ("batch|--dir"|"batch|--jobs"|"batch|--quota-wait"|"batch|--resume"|"batch|--retry-failed"|"batch|--retries"|"batch|--halt"|"batch|--on-unit-done"|"dispatch|--prompt-file"|"dispatch|--result-file"|"dispatch|--unit-id"|"dispatch|--mode"|"dispatch|--add-dir"|"dispatch|--continue-from"|"report-state|--root"|"report-state|--batch"|"report-state|--sort"|"report-state|--min-tail-bytes"|"snapshot-tail|--unit"|"snapshot-tail|--dest"|"snapshot-tail|--output"|"quota route|--model"|"models|--listing"|"env|--keep"|"job run|--profile"|"job run|--name"|"job run|--timeout"|"job run|--model"|"job run|--thinking"|"job run|--cwd"|"job resume|--timeout"|"job wait|--timeout"|"job peek|-n") expect="$w" ;;
      esac
      continue
    fi
    if (( n == 0 )); then
      case "$p|$w" in
        ("|batch") p='batch'; continue ;;
        ("|cancel") p='cancel'; continue ;;
        ("|status") p='status'; continue ;;
        ("|wait") p='wait'; continue ;;
        ("|log") p='log'; continue ;;
        ("|clean") p='clean'; continue ;;
        ("|clone") p='clone'; continue ;;
        ("|completion") p='completion'; continue ;;
        ("|help") p='help'; continue ;;
        ("|dispatch") p='dispatch'; continue ;;
        ("|monitor") p='monitor'; continue ;;
        ("|gather") p='gather'; continue ;;
        ("|report-state") p='report-state'; continue ;;
        ("|snapshot-tail") p='snapshot-tail'; continue ;;
        ("|quota") p='quota'; continue ;;
        ("|models") p='models'; continue ;;
        ("|env") p='env'; continue ;;
        ("|job") p='job'; continue ;;
        ("quota|refresh") p='quota refresh'; continue ;;
        ("quota|route") p='quota route'; continue ;;
        ("job|run") p='job run'; continue ;;
        ("job|resume") p='job resume'; continue ;;
        ("job|wait") p='job wait'; continue ;;
        ("job|result") p='job result'; continue ;;
        ("job|steer") p='job steer'; continue ;;
        ("job|abort") p='job abort'; continue ;;
        ("job|kill") p='job kill'; continue ;;
        ("job|status") p='job status'; continue ;;
        ("job|peek") p='job peek'; continue ;;
        ("job|list") p='job list'; continue ;;
        ("job|profiles") p='job profiles'; continue ;;
        ("job|rm") p='job rm'; continue ;;
        ("job|completion") p='job completion'; continue ;;
      esac
    fi
    (( n++ ))
  done
  if [[ -z $expect && dd -eq 0 && $cur == --*=* ]]; then expect="${cur%%=*}"; compset -P "*="; fi
  if [[ -n $expect ]]; then
    case "$p|$expect" in
      ("batch|--dir") _files -/ ;;
      ("batch|--resume") _files -/ ;;
      ("batch|--retry-failed") _files -/ ;;
      ("batch|--on-unit-done") _command_names -e ;;
      ("dispatch|--prompt-file") _files ;;
      ("dispatch|--result-file") _files ;;
      ("dispatch|--mode") compadd -- 'plan' 'accept-edits' ;;
      ("dispatch|--add-dir") _files -/ ;;
      ("dispatch|--continue-from") _files -/ ;;
      ("report-state|--root") _files -/ ;;
      ("report-state|--batch") _files -/ ;;
      ("report-state|--sort") compadd -- 'path' 'tail-bytes-desc' ;;
      ("snapshot-tail|--unit") _files -/ ;;
      ("snapshot-tail|--dest") _files -/ ;;
      ("snapshot-tail|--output") _files ;;
      ("models|--listing") _files ;;
      ("job run|--cwd") _files -/ ;;
    esac
    return 0
  fi
  if (( dd )); then
    case "$p" in
      ("env") if (( n == 0 )); then _command_names -e; else _files; fi ;;
    esac
    return 0
  fi
  if [[ $cur == -* ]]; then
    case "$p" in
      ("") compadd -- '--help' '--version' ;;
      ("batch") compadd -- '--dir' '--jobs' '--json' '--no-quota-wait' '--quota-wait' '--resume' '--retry-failed' '--dry-run' '--retries' '--halt' '--on-unit-done' '--help' '--version' ;;
      ("cancel") compadd -- '--help' '--version' ;;
      ("status") compadd -- '--json' '--watch' '--help' '--version' ;;
      ("wait") compadd -- '--json' '--help' '--version' ;;
      ("log") compadd -- '--follow' '-f' '--raw' '--help' '--version' ;;
      ("clean") compadd -- '--dry-run' '--snapshot' '--clones' '--json' '--help' '--version' ;;
      ("clone") compadd -- '--help' '--version' ;;
      ("completion") compadd -- '--help' '--version' ;;
      ("help") compadd -- '--help' '--version' ;;
      ("dispatch") compadd -- '--prompt-file' '--result-file' '--unit-id' '--mode' '--add-dir' '--continue-from' '--help' '--version' ;;
      ("monitor") compadd -- '--json' '--help' '--version' ;;
      ("gather") compadd -- '--json' '--help' '--version' ;;
      ("report-state") compadd -- '--root' '--batch' '--json' '--summary' '--sort' '--min-tail-bytes' '--include-legacy-pid' '--help' '--version' ;;
      ("snapshot-tail") compadd -- '--unit' '--dest' '--output' '--json' '--help' '--version' ;;
      ("quota") compadd -- '--json' '--no-refresh' '--help' '--version' ;;
      ("quota refresh") compadd -- '--json' '--force' '--help' '--version' ;;
      ("quota route") compadd -- '--json' '--model' '--help' '--version' ;;
      ("models") compadd -- '--listing' '--json' '--help' '--version' ;;
      ("env") compadd -- '--keep' '--list' '--json' '--help' '--version' ;;
      ("job") compadd -- '--help' '--version' ;;
      ("job run") compadd -- '--profile' '--name' '--background' '--timeout' '--fork' '--model' '--thinking' '--cwd' '--help' ;;
      ("job resume") compadd -- '--background' '--timeout' '--help' ;;
      ("job wait") compadd -- '--timeout' '--json' '--help' ;;
      ("job result") compadd -- '--json' '--help' ;;
      ("job steer") compadd -- '--help' ;;
      ("job abort") compadd -- '--help' ;;
      ("job kill") compadd -- '--all' '--help' ;;
      ("job status") compadd -- '--json' '--help' ;;
      ("job peek") compadd -- '-n' '--follow' '-f' '--help' ;;
      ("job list") compadd -- '--all' '--json' '--help' ;;
      ("job profiles") compadd -- '--help' ;;
      ("job rm") compadd -- '--help' ;;
      ("job completion") compadd -- '--help' ;;
    esac
    return 0
  fi
  if (( n == 0 )); then
    case "$p" in
      ("") compadd -- 'batch' 'cancel' 'status' 'wait' 'log' 'clean' 'clone' 'completion' 'help' 'dispatch' 'monitor' 'gather' 'report-state' 'snapshot-tail' 'quota' 'models' 'env' 'job' ;;
      ("quota") compadd -- 'refresh' 'route' ;;
      ("job") compadd -- 'run' 'resume' 'wait' 'result' 'steer' 'abort' 'kill' 'status' 'peek' 'list' 'profiles' 'rm' 'completion' ;;
    esac
  fi
  case "$p|$n" in
    ("batch|0") _files ;;
    ("cancel|0") _files -/ ;;
    ("status|0") _files -/ ;;
    ("wait|0") _files -/ ;;
    ("log|0") _files -/ ;;
    ("clean|0") _files -/ ;;
    ("clone|0") _files -/ ;;
    ("clone|1") _files ;;
    ("completion|0") compadd -- 'bash' 'zsh' 'fish' ;;
    ("help|0") compadd -- 'batch' 'cancel' 'status' 'wait' 'log' 'clean' 'clone' 'completion' 'help' 'dispatch' 'monitor' 'gather' 'report-state' 'snapshot-tail' 'quota' 'models' 'env' 'job' ;;
    ("monitor|0") _files -/ ;;
    ("monitor|"*) _files -/ ;;
    ("gather|0") _files ;;
    ("gather|"*) _files ;;
    ("job resume|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job wait|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job result|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job steer|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job abort|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job kill|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job status|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job peek|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job rm|0") compadd -- ${(f)"$(prun job __names 2>/dev/null)"} ;;
    ("job completion|0") compadd -- 'bash' 'zsh' 'fish' ;;
  esac
  return 0
}
compdef _prun prun
