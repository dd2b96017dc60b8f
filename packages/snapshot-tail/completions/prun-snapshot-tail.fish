# fish completion for prun-snapshot-tail (generated from its declaration)
function __prun_snapshot_tail_complete
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
                case '|--unit' '|--dest' '|--output'
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
            case '|--unit'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--dest'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--output'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
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
                printf '%s\n' '--unit	the unit state directory (its \'tail\' is the source)' '--dest	directory for snapshot-<UTC stamp>-<8 hex>.zip (default: $XDG_STATE_HOME/anywhere-agents/prun/snapshots, or ~/.local/state/anywhere-agents/prun/snapshots; created 0700)' '--output	exact archive path (not with --dest)' '--json	print {"published", "manifest", "warning"} as JSON' '--help	show this help' '--version	print the version'
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
complete -c prun-snapshot-tail -f -a '(__prun_snapshot_tail_complete)'
