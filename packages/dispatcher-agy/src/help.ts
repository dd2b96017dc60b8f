export const USAGE = `usage: prun-dispatch-agy --prompt-file PROMPT_FILE --result-file RESULT_FILE --unit-id UNIT_ID
                         [--mode {plan,accept-edits}] [--add-dir ADD_DIR]... [--continue-from STATE_DIR]`;

export const HELP = `${USAGE}

Run one prun unit through the Antigravity CLI (agy) and publish one result.
Prints exactly one stdout line, STATE-DIR <path>, once the unit's state directory exists.

options:
  -h, --help               show this help and exit
  --version                print the version and exit
  --prompt-file PATH       the unit prompt (UTF-8 text)
  --result-file PATH       where the result is published; must not exist yet
  --unit-id ID             unit name: letters, digits, dashes, underscores
  --mode {plan,accept-edits}
                           Agy execution mode. accept-edits is the default only in a
                           dispatcher-created scratch directory; PRUN_SCRATCH_CWD or --add-dir
                           need an explicit mode. plan never gets --dangerously-skip-permissions.
  --add-dir PATH           extra directory for Agy's workspace (repeatable)
  --continue-from STATE_DIR
                           resume the conversation recorded in STATE_DIR/conversation-id

Any unambiguous prefix of an option works (--prompt, --unit), and so does --opt=value.

environment:
  ANTIGRAVITY_BIN                       agy executable (default: agy on PATH)
  ANTIGRAVITY_DISPATCH_MODEL            pin a model (no balancing, no family resolution)
  ANTIGRAVITY_DISPATCH_EFFORT           --effort value (default: the model's tier, else high)
  ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS  agy --print-timeout (default 2700)
  PRUN_AGY_KILL_GRACE_SECONDS           the worker is killed this long after that timeout (default 60)
  PRUN_AGY_SIGNAL_GRACE_SECONDS         after a forwarded signal, SIGKILL follows after this (default 5)
  ANTIGRAVITY_PREFLIGHT                 auto | force | off (default auto)
  ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS per preflight command (default 60)
  PRUN_SCRATCH_CWD                      worker cwd instead of <state-dir>/work
  PRUN_AGY_QUOTA_GATE                   0/off/false/disabled/no turns quota routing off
  AGY_QUOTA_CACHE                       caller-owned quota snapshot
  PRUN_KEEP_ENV                         comma-separated names let through the secret scrub

PRUN_AGY_SANDBOX=1 adds Agy's --sandbox. The flag is omitted by default because on Windows it
needs an elevated admin broker and raises a UAC prompt for every unit that runs a command. The
variable does not disable a sandbox enabled in Agy's own settings (enableTerminalSandbox).

exit codes:
  0    result published (or the worker wrote its own result and succeeded)
  2    usage error, bad setting, result path exists (nothing created); also an invalid
       ANTIGRAVITY_PREFLIGHT(_TIMEOUT_SECONDS) after STATE-DIR (with a FALLBACK)
  70   no agy binary; preflight failure or unavailable model; launch failure; no or too short
       response; non-success status; a FALLBACK that could not be written; internal error
  75   quota: the model's group (or both groups) exhausted
  124  preflight timed out, or the worker outlived its deadline and was killed
  N    agy exited with code N
  128+n  the worker was killed by signal n, or the dispatcher got signal n (SIGINT, SIGTERM,
       SIGHUP) and stopped the worker's process group
`;
