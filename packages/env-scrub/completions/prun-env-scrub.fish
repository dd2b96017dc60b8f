# fish completion for prun-env-scrub (generated from its declaration)
function __prun_env_scrub_complete
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
                case '|--keep'
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
        end
        return 0
    end
    if test $dd = 1
        switch "$p"
            case ''
                if test $n = 0; complete -C "$cur"; else; __fish_complete_path "$cur"; end
        end
        return 0
    end
    if string match -q -- '-*' "$cur"
        switch "$p"
            case ''
                printf '%s\n' '--keep	also let these names through (repeatable; adds to PRUN_KEEP_ENV)' '--list	print the withheld names instead of running a command' '--json	with --list: print {"withheld": [...], "kept": N}' '--help	show this help' '--version	print the version'
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
complete -c prun-env-scrub -f -a '(__prun_env_scrub_complete)'
