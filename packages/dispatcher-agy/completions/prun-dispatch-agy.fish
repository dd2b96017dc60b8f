# fish completion for prun-dispatch-agy (generated from its declaration)
function __prun_dispatch_agy_complete
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
                case '|--prompt-file' '|--result-file' '|--unit-id' '|--mode' '|--add-dir' '|--continue-from'
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
            case '|--prompt-file'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--result-file'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--mode'
                for c in (printf '%s\n' 'plan' 'accept-edits'); printf '%s%s\n' "$prefix" "$c"; end
            case '|--add-dir'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case '|--continue-from'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
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
                printf '%s\n' '--prompt-file	the unit prompt (UTF-8 text)' '--result-file	where the result is published; must not exist yet' '--unit-id	unit name: letters, digits, dashes, underscores' '--mode	Agy execution mode. accept-edits is the default only in a dispatcher-created scratch directory; PRUN_SCRATCH_CWD or --add-dir need an explicit mode. plan never gets --dangerously-skip-permissions.' '--add-dir	extra directory for Agy\'s workspace (repeatable)' '--continue-from	resume the conversation recorded in STATE_DIR/conversation-id' '--help	show this help' '--version	print the version'
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
complete -c prun-dispatch-agy -f -a '(__prun_dispatch_agy_complete)'
