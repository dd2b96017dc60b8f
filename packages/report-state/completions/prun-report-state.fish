# fish completion for prun-report-state (generated from its declaration)
function __prun_report_state_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l p ""
    set -l expect ""
    set -l n 0
    set -l dd 0
    for w in $tokens[2..-1]
        if test -n "$expect"
            set expect ""
            continue
        end
        if test $dd = 1
            set n (math $n + 1)
            continue
        end
        if test "$w" = --
            set dd 1
            set n 0
            continue
        end
        if string match -qr -- '^-.' "$w"
            string match -q -- '*=*' "$w"; and continue
            switch "$p|$w"
                case '|--root' '|--batch' '|--sort' '|--min-tail-bytes'
                    set expect "$w"
            end
            continue
        end
        if test $n = 0
            switch "$p|$w"
            end
        end
        set n (math $n + 1)
    end
    set -l prefix ""
    if test -z "$expect"; and test $dd = 0; and string match -qr -- '^--[^=]+=' "$cur"
        set expect (string replace -r -- '=.*' '' "$cur")
        set prefix "$expect="
        set cur (string replace -r -- '^[^=]*=' '' "$cur")
    end
    if test -n "$expect"
        switch "$p|$expect"
            case '|--root'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--batch'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--sort'
                for c in (printf '%s\n' 'path' 'tail-bytes-desc'); printf '%s%s\n' "$prefix" "$c"; end
        end
        return 0
    end
    if test $dd = 1
        switch "$p"
        end
        return 0
    end
    if string match -q -- '-*' "$cur"
        switch "$p"
            case ''
                printf '%s\n' '--root	a directory holding prun-task-* units (repeatable; default: the system temporary directory, TMPDIR, TEMP, TMP, /tmp, ...)' '--batch	only the state directories this prun batch recorded in its ledger (default roots: the folders holding them; with --root, only those under the roots given)' '--json	one JSON document (schema_version 1) instead of the table' '--summary	add counts by result and by path state, and the two byte counters' '--sort	the order of the units' '--min-tail-bytes	list only units whose tail holds at least N bytes (display only: counts, summary and exit code still cover every unit)' '--include-legacy-pid	add the recorded dispatch-pid text (never verified)' '--help	show this help' '--version	print the version'
        end
        return 0
    end
    if test $n = 0
        switch "$p"
        end
    end
    switch "$p|$n"
    end
end
complete -c prun-report-state -f -a '(__prun_report_state_complete)'
