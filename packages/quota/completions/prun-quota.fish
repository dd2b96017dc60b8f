# fish completion for prun-quota (generated from its declaration)
function __prun_quota_complete
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
                case 'route|--model'
                    set expect "$w"
            end
            continue
        end
        if test $n = 0
            switch "$p|$w"
                case '|refresh'
                    set p 'refresh'
                    continue
                case '|route'
                    set p 'route'
                    continue
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
                printf '%s\n' '--json	one JSON document instead of text' '--no-refresh	do not start a background refresh of a stale snapshot' '--help	show this help' '--version	print the version'
            case 'refresh'
                printf '%s\n' '--json	one JSON document instead of text' '--force	refresh even within the TTL' '--help	show this help' '--version	print the version'
            case 'route'
                printf '%s\n' '--json	one JSON document instead of text' '--model	the pinned model (default: ANTIGRAVITY_DISPATCH_MODEL)' '--help	show this help' '--version	print the version'
        end
        return 0
    end
    if test $n = 0
        switch "$p"
            case ''
                printf '%s\n' 'refresh	query agy /usage and rewrite the snapshot' 'route	the model a unit would run on, or why it may not start'
        end
    end
    switch "$p|$n"
    end
end
complete -c prun-quota -f -a '(__prun_quota_complete)'
