# fish completion for prun (generated from its declaration)
function __prun_complete
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
                case 'batch|--dir' 'batch|--jobs' 'batch|--quota-wait' 'batch|--resume' 'batch|--retry-failed' 'batch|--retries' 'batch|--halt' 'batch|--on-unit-done' 'dispatch|--prompt-file' 'dispatch|--result-file' 'dispatch|--unit-id' 'dispatch|--mode' 'dispatch|--add-dir' 'dispatch|--continue-from' 'report-state|--root' 'report-state|--batch' 'report-state|--sort' 'report-state|--min-tail-bytes' 'snapshot-tail|--unit' 'snapshot-tail|--dest' 'snapshot-tail|--output' 'quota route|--model' 'models|--listing' 'env|--keep' 'job run|--profile' 'job run|--name' 'job run|--timeout' 'job run|--model' 'job run|--thinking' 'job run|--cwd' 'job resume|--timeout' 'job wait|--timeout' 'job peek|-n'
                    set expect "$w"
            end
            continue
        end
        if test $n = 0
            switch "$p|$w"
                case '|batch'
                    set p 'batch'
                    continue
                case '|cancel'
                    set p 'cancel'
                    continue
                case '|status'
                    set p 'status'
                    continue
                case '|wait'
                    set p 'wait'
                    continue
                case '|log'
                    set p 'log'
                    continue
                case '|clean'
                    set p 'clean'
                    continue
                case '|clone'
                    set p 'clone'
                    continue
                case '|completion'
                    set p 'completion'
                    continue
                case '|help'
                    set p 'help'
                    continue
                case '|dispatch'
                    set p 'dispatch'
                    continue
                case '|monitor'
                    set p 'monitor'
                    continue
                case '|gather'
                    set p 'gather'
                    continue
                case '|report-state'
                    set p 'report-state'
                    continue
                case '|snapshot-tail'
                    set p 'snapshot-tail'
                    continue
                case '|quota'
                    set p 'quota'
                    continue
                case '|models'
                    set p 'models'
                    continue
                case '|env'
                    set p 'env'
                    continue
                case '|job'
                    set p 'job'
                    continue
                case 'quota|refresh'
                    set p 'quota refresh'
                    continue
                case 'quota|route'
                    set p 'quota route'
                    continue
                case 'job|run'
                    set p 'job run'
                    continue
                case 'job|resume'
                    set p 'job resume'
                    continue
                case 'job|wait'
                    set p 'job wait'
                    continue
                case 'job|result'
                    set p 'job result'
                    continue
                case 'job|steer'
                    set p 'job steer'
                    continue
                case 'job|abort'
                    set p 'job abort'
                    continue
                case 'job|kill'
                    set p 'job kill'
                    continue
                case 'job|status'
                    set p 'job status'
                    continue
                case 'job|peek'
                    set p 'job peek'
                    continue
                case 'job|list'
                    set p 'job list'
                    continue
                case 'job|profiles'
                    set p 'job profiles'
                    continue
                case 'job|rm'
                    set p 'job rm'
                    continue
                case 'job|completion'
                    set p 'job completion'
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
            case 'batch|--dir'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'batch|--resume'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'batch|--retry-failed'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'batch|--on-unit-done'
                for c in (complete -C "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'dispatch|--prompt-file'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'dispatch|--result-file'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'dispatch|--mode'
                for c in (printf '%s\n' 'plan' 'accept-edits'); printf '%s%s\n' "$prefix" "$c"; end
            case 'dispatch|--add-dir'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'dispatch|--continue-from'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'report-state|--root'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'report-state|--batch'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'report-state|--sort'
                for c in (printf '%s\n' 'path' 'tail-bytes-desc'); printf '%s%s\n' "$prefix" "$c"; end
            case 'snapshot-tail|--unit'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'snapshot-tail|--dest'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'snapshot-tail|--output'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'models|--listing'
                for c in (__fish_complete_path "$cur"); printf '%s%s\n' "$prefix" "$c"; end
            case 'job run|--cwd'
                for c in (__fish_complete_directories "$cur"); printf '%s%s\n' "$prefix" "$c"; end
        end
        return 0
    end
    if test $dd = 1
        switch "$p"
            case 'env'
                if test $n = 0; complete -C "$cur"; else; __fish_complete_path "$cur"; end
        end
        return 0
    end
    if string match -q -- '-*' "$cur"
        switch "$p"
            case ''
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'batch'
                printf '%s\n' '--dir	the new batch directory (default: ./prun-batch-<stamp>)' '--jobs	units running at once (default: the number of CPUs)' '--json	print the outcome as one JSON document' '--no-quota-wait	stop (exit 75) instead of waiting when quota refuses a unit' '--quota-wait	how long to wait for quota before trying again' '--resume	continue a batch after a crash or kill' '--retry-failed	run the failed units of a batch again, as follow-up turns' '--dry-run	check everything and print the schedule (waves, mode, workspace, model, quota); start and create nothing' '--retries	run a failed or invalid unit again up to N times, as follow-up turns' '--halt	now,fail=N: stop every running unit once N units failed; soon,fail=N: start no more (N or P%)' '--on-unit-done	run CMD (sh -c) after each unit settles, with PRUN_UNIT_ID, PRUN_UNIT_STATUS, PRUN_UNIT_RESULT, PRUN_UNIT_STATE_DIR set' '--help	show this help' '--version	print the version'
            case 'cancel'
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'status'
                printf '%s\n' '--json	one JSON document' '--watch	follow the batch live until it ends (read-only)' '--help	show this help' '--version	print the version'
            case 'wait'
                printf '%s\n' '--json	print the final summary as one JSON document' '--help	show this help' '--version	print the version'
            case 'log'
                printf '%s\n' '--follow	keep printing as the worker writes, until the unit settles' '-f	keep printing as the worker writes, until the unit settles' '--raw	the tail\'s bytes as they are' '--help	show this help' '--version	print the version'
            case 'clean'
                printf '%s\n' '--dry-run	list what would go and how many bytes; remove nothing' '--snapshot	first archive each state dir\'s tail with snapshot-tail (default destination)' '--clones	remove the settled units\' throwaway clones (<DIR>/clones/<id>) too' '--json	one JSON document' '--help	show this help' '--version	print the version'
            case 'clone'
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'completion'
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'help'
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'dispatch'
                printf '%s\n' '--prompt-file	the unit prompt (UTF-8 text)' '--result-file	where the result is published; must not exist yet' '--unit-id	unit name: letters, digits, dashes, underscores' '--mode	Agy execution mode. accept-edits is the default only in a dispatcher-created scratch directory; PRUN_SCRATCH_CWD or --add-dir need an explicit mode. plan never gets --dangerously-skip-permissions.' '--add-dir	extra directory for Agy\'s workspace (repeatable)' '--continue-from	resume the conversation recorded in STATE_DIR/conversation-id' '--help	show this help' '--version	print the version'
            case 'monitor'
                printf '%s\n' '--json	the same events as NDJSON' '--help	show this help' '--version	print the version'
            case 'gather'
                printf '%s\n' '--json	the same events as NDJSON' '--help	show this help' '--version	print the version'
            case 'report-state'
                printf '%s\n' '--root	a directory holding prun-task-* units (repeatable; default: the system temporary directory, TMPDIR, TEMP, TMP, /tmp, ...)' '--batch	only the state directories this prun batch recorded in its ledger (default roots: the folders holding them; with --root, only those under the roots given)' '--json	one JSON document (schema_version 1) instead of the table' '--summary	add counts by result and by path state, and the two byte counters' '--sort	the order of the units' '--min-tail-bytes	list only units whose tail holds at least N bytes (display only: counts, summary and exit code still cover every unit)' '--include-legacy-pid	add the recorded dispatch-pid text (never verified)' '--help	show this help' '--version	print the version'
            case 'snapshot-tail'
                printf '%s\n' '--unit	the unit state directory (its \'tail\' is the source)' '--dest	directory for snapshot-<UTC stamp>-<8 hex>.zip (default: $XDG_STATE_HOME/anywhere-agents/prun/snapshots, or ~/.local/state/anywhere-agents/prun/snapshots; created 0700)' '--output	exact archive path (not with --dest)' '--json	print {"published", "manifest", "warning"} as JSON' '--help	show this help' '--version	print the version'
            case 'quota'
                printf '%s\n' '--json	one JSON document instead of text' '--no-refresh	do not start a background refresh of a stale snapshot' '--help	show this help' '--version	print the version'
            case 'quota refresh'
                printf '%s\n' '--json	one JSON document instead of text' '--force	refresh even within the TTL' '--help	show this help' '--version	print the version'
            case 'quota route'
                printf '%s\n' '--json	one JSON document instead of text' '--model	the pinned model (default: ANTIGRAVITY_DISPATCH_MODEL)' '--help	show this help' '--version	print the version'
            case 'models'
                printf '%s\n' '--listing	read the listing from FILE, or from stdin when FILE is -' '--json	print {"template", "resolved", "pool", "effort"}' '--help	show this help' '--version	print the version'
            case 'env'
                printf '%s\n' '--keep	also let these names through (repeatable; adds to PRUN_KEEP_ENV)' '--list	print the withheld names instead of running a command' '--json	with --list: print {"withheld": [...], "kept": N}' '--help	show this help' '--version	print the version'
            case 'job'
                printf '%s\n' '--help	show this help' '--version	print the version'
            case 'job run'
                printf '%s\n' '--profile	which agent profile to use, any case' '--name	the job\'s name (default: the profile\'s name and 4 hex digits)' '--background	start the job and return at once; the job keeps running' '--timeout	stop the run after S seconds of wall time (0: no limit; default 3600 for a background job, no limit in the foreground)' '--fork	begin from a copy of the calling agent\'s session ($PI_SESSION_FILE)' '--model	model pattern for the agent (pi\'s --model)' '--thinking	thinking level for the agent (pi\'s --thinking)' '--cwd	the agent\'s working directory (default: this one)' '--help	show this help'
            case 'job resume'
                printf '%s\n' '--background	start the job and return at once; the job keeps running' '--timeout	stop the run after S seconds of wall time (0: no limit; default 3600 for a background job, no limit in the foreground)' '--help	show this help'
            case 'job wait'
                printf '%s\n' '--timeout	give up after S seconds (exit 2)' '--json	one JSON document instead of text' '--help	show this help'
            case 'job result'
                printf '%s\n' '--json	one JSON document instead of text' '--help	show this help'
            case 'job steer'
                printf '%s\n' '--help	show this help'
            case 'job abort'
                printf '%s\n' '--help	show this help'
            case 'job kill'
                printf '%s\n' '--all	every running job of this project' '--help	show this help'
            case 'job status'
                printf '%s\n' '--json	one JSON document instead of text' '--help	show this help'
            case 'job peek'
                printf '%s\n' '-n	how many lines of progress' '--follow	keep printing progress until the job stops running' '-f	keep printing progress until the job stops running' '--help	show this help'
            case 'job list'
                printf '%s\n' '--all	include finished jobs' '--json	one JSON document instead of text' '--help	show this help'
            case 'job profiles'
                printf '%s\n' '--help	show this help'
            case 'job rm'
                printf '%s\n' '--help	show this help'
            case 'job completion'
                printf '%s\n' '--help	show this help'
        end
        return 0
    end
    if test $n = 0
        switch "$p"
            case ''
                printf '%s\n' 'batch	run a whole fan-out from a JSON or YAML plan, with a ledger; resumable' 'cancel	stop units of a batch, running or queued, whether its driver is alive or not' 'status	a batch\'s units and their states' 'wait	block until a batch has finished, whoever drives it; exit with its exit code' 'log	a unit\'s worker output, rendered for a person' 'clean	remove the state dirs (and with --clones the clones) of a batch\'s settled units' 'clone	a throwaway local clone for a code-writing unit (remote removed)' 'completion	print the completion script of prun and every prun-* bin' 'help	the help of prun or of one command' 'dispatch	run one unit through agy; prints STATE-DIR, publishes the result or a FALLBACK' 'monitor	watch state dirs; wake on the first failure, stall, all-done or timeout' 'gather	wait until result files have landed and gone quiet' 'report-state	read-only inventory of leftover prun-task-* state directories' 'snapshot-tail	archive a unit\'s tail into a verified ZIP, never replacing anything' 'quota	quota readout, refresh, and the routing decision for a model' 'models	resolve a model template to the newest listed model of its family' 'env	run a command with secret-shaped variables withheld, or list them' 'job	named pi agent jobs: run, resume, wait, result, steer, abort, kill, list'
            case 'quota'
                printf '%s\n' 'refresh	query agy /usage and rewrite the snapshot' 'route	the model a unit would run on, or why it may not start'
            case 'job'
                printf '%s\n' 'run	start a new job with a prompt' 'resume	give a finished job a new prompt in the same session' 'wait	wait until the job stops running' 'result	print the job\'s final answer' 'steer	send a running job a message' 'abort	abort the job\'s current turn' 'kill	stop a job (or every job of this project)' 'status	the job\'s state' 'peek	the job\'s recent progress' 'list	this project\'s jobs' 'profiles	the agent profiles a job can use' 'rm	remove a stopped job and its session files' 'completion	print a shell completion script'
        end
    end
    switch "$p|$n"
        case 'batch|0'
            __fish_complete_path "$cur"
        case 'cancel|0'
            __fish_complete_directories "$cur"
        case 'status|0'
            __fish_complete_directories "$cur"
        case 'wait|0'
            __fish_complete_directories "$cur"
        case 'log|0'
            __fish_complete_directories "$cur"
        case 'clean|0'
            __fish_complete_directories "$cur"
        case 'clone|0'
            __fish_complete_directories "$cur"
        case 'clone|1'
            __fish_complete_path "$cur"
        case 'completion|0'
            printf '%s\n' 'bash' 'zsh' 'fish'
        case 'help|0'
            printf '%s\n' 'batch' 'cancel' 'status' 'wait' 'log' 'clean' 'clone' 'completion' 'help' 'dispatch' 'monitor' 'gather' 'report-state' 'snapshot-tail' 'quota' 'models' 'env' 'job'
        case 'monitor|0'
            __fish_complete_directories "$cur"
        case 'monitor|''*'
            __fish_complete_directories "$cur"
        case 'gather|0'
            __fish_complete_path "$cur"
        case 'gather|''*'
            __fish_complete_path "$cur"
        case 'job resume|0'
            prun job __names 2>/dev/null
        case 'job wait|0'
            prun job __names 2>/dev/null
        case 'job result|0'
            prun job __names 2>/dev/null
        case 'job steer|0'
            prun job __names 2>/dev/null
        case 'job abort|0'
            prun job __names 2>/dev/null
        case 'job kill|0'
            prun job __names 2>/dev/null
        case 'job status|0'
            prun job __names 2>/dev/null
        case 'job peek|0'
            prun job __names 2>/dev/null
        case 'job rm|0'
            prun job __names 2>/dev/null
        case 'job completion|0'
            printf '%s\n' 'bash' 'zsh' 'fish'
    end
end
complete -c prun -f -a '(__prun_complete)'
