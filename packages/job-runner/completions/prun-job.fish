# fish completion for prun-job (generated from its declaration)
function __prun_job_complete
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
                case 'run|--profile' 'run|--name' 'run|--timeout' 'run|--model' 'run|--thinking' 'run|--cwd' 'resume|--timeout' 'wait|--timeout' 'peek|-n'
                    set expect "$w"
            end
            continue
        end
        if test $n = 0
            switch "$p|$w"
                case '|run'
                    set p 'run'
                    continue
                case '|resume'
                    set p 'resume'
                    continue
                case '|wait'
                    set p 'wait'
                    continue
                case '|result'
                    set p 'result'
                    continue
                case '|steer'
                    set p 'steer'
                    continue
                case '|abort'
                    set p 'abort'
                    continue
                case '|kill'
                    set p 'kill'
                    continue
                case '|status'
                    set p 'status'
                    continue
                case '|peek'
                    set p 'peek'
                    continue
                case '|list'
                    set p 'list'
                    continue
                case '|profiles'
                    set p 'profiles'
                    continue
                case '|rm'
                    set p 'rm'
                    continue
                case '|completion'
                    set p 'completion'
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
            case 'run|--cwd'
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
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'run'
                printf '%s\n' '--profile	which agent profile to use, any case' '--name	the job\'s name (default: the profile\'s name and 4 hex digits)' '--background	start the job and return at once; the job keeps running' '--timeout	stop the run after S seconds of wall time (0: no limit; default 3600 for a background job, no limit in the foreground)' '--fork	begin from a copy of the calling agent\'s session ($PI_SESSION_FILE)' '--model	model pattern for the agent (pi\'s --model)' '--thinking	thinking level for the agent (pi\'s --thinking)' '--cwd	the agent\'s working directory (default: this one)' '--help	show this help'
            case 'resume'
                printf '%s\n' '--background	start the job and return at once; the job keeps running' '--timeout	stop the run after S seconds of wall time (0: no limit; default 3600 for a background job, no limit in the foreground)' '--help	show this help'
            case 'wait'
                printf '%s\n' '--timeout	give up after S seconds (exit 2)' '--json	one JSON document instead of text' '--help	show this help'
            case 'result'
                printf '%s\n' '--json	one JSON document instead of text' '--help	show this help'
            case 'steer'
                printf '%s\n' '--help	show this help'
            case 'abort'
                printf '%s\n' '--help	show this help'
            case 'kill'
                printf '%s\n' '--all	every running job of this project' '--help	show this help'
            case 'status'
                printf '%s\n' '--json	one JSON document instead of text' '--help	show this help'
            case 'peek'
                printf '%s\n' '-n	how many lines of progress' '--follow	keep printing progress until the job stops running' '-f	keep printing progress until the job stops running' '--help	show this help'
            case 'list'
                printf '%s\n' '--all	include finished jobs' '--json	one JSON document instead of text' '--help	show this help'
            case 'profiles'
                printf '%s\n' '--help	show this help'
            case 'rm'
                printf '%s\n' '--help	show this help'
            case 'completion'
                printf '%s\n' '--help	show this help'
        end
        return 0
    end
    if test $n = 0
        switch "$p"
            case ''
                printf '%s\n' 'run	start a new job with a prompt' 'resume	give a finished job a new prompt in the same session' 'wait	wait until the job stops running' 'result	print the job\'s final answer' 'steer	send a running job a message' 'abort	abort the job\'s current turn' 'kill	stop a job (or every job of this project)' 'status	the job\'s state' 'peek	the job\'s recent progress' 'list	this project\'s jobs' 'profiles	the agent profiles a job can use' 'rm	remove a stopped job and its session files' 'completion	print a shell completion script'
        end
    end
    switch "$p|$n"
        case 'resume|0'
            prun-job __names 2>/dev/null
        case 'wait|0'
            prun-job __names 2>/dev/null
        case 'result|0'
            prun-job __names 2>/dev/null
        case 'steer|0'
            prun-job __names 2>/dev/null
        case 'abort|0'
            prun-job __names 2>/dev/null
        case 'kill|0'
            prun-job __names 2>/dev/null
        case 'status|0'
            prun-job __names 2>/dev/null
        case 'peek|0'
            prun-job __names 2>/dev/null
        case 'rm|0'
            prun-job __names 2>/dev/null
        case 'completion|0'
            printf '%s\n' 'bash' 'zsh' 'fish'
    end
end
complete -c prun-job -f -a '(__prun_job_complete)'
