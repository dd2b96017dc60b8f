// The declaration of prun-dispatch-agy: its argparse-compatible parser, --help, completion and
// exit-code tables come from here.
import type { BinSpec } from '@prun/kit/spec';

export const MODES = ['plan', 'accept-edits'] as const;
export type Mode = (typeof MODES)[number];

export const SPEC: BinSpec = {
  name: 'prun-dispatch-agy',
  summary: 'run one unit through agy; prints STATE-DIR, publishes the result or a FALLBACK',
  helpStyle: 'argparse',
  // argparse's own wrapping of the usage line, continuation indented under the first option.
  usage: [
    `--prompt-file PROMPT_FILE --result-file RESULT_FILE --unit-id UNIT_ID
                         [--mode {plan,accept-edits}] [--add-dir ADD_DIR]... [--continue-from STATE_DIR]`,
  ],
  description: `Run one prun unit through the Antigravity CLI (agy) and publish one result.
Prints exactly one stdout line, STATE-DIR <path>, once the unit's state directory exists.`,
  options: [
    { long: '--prompt-file', value: { name: 'PATH', kind: 'file' }, required: true, help: 'the unit prompt (UTF-8 text)' },
    { long: '--result-file', value: { name: 'PATH', kind: 'path' }, required: true, help: 'where the result is published; must not exist yet' },
    { long: '--unit-id', value: { name: 'ID', kind: 'string' }, required: true, help: 'unit name: letters, digits, dashes, underscores' },
    {
      long: '--mode',
      value: { name: 'MODE', kind: 'choice', choices: MODES },
      help: 'Agy execution mode. accept-edits is the default only in a dispatcher-created scratch directory; PRUN_SCRATCH_CWD or --add-dir need an explicit mode. plan never gets --dangerously-skip-permissions.',
    },
    { long: '--add-dir', value: { name: 'PATH', kind: 'dir' }, repeatable: true, help: "extra directory for Agy's workspace (repeatable)" },
    { long: '--continue-from', value: { name: 'STATE_DIR', kind: 'dir' }, help: 'resume the conversation recorded in STATE_DIR/conversation-id' },
  ],
  env: [
    { name: 'ANTIGRAVITY_BIN', help: 'agy executable (default: agy on PATH)' },
    { name: 'ANTIGRAVITY_DISPATCH_MODEL', help: 'pin a model (no balancing, no family resolution)' },
    { name: 'ANTIGRAVITY_DISPATCH_EFFORT', help: "--effort value (default: the model's tier, else high)" },
    { name: 'ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS', help: 'agy --print-timeout', default: '2700' },
    { name: 'PRUN_AGY_KILL_GRACE_SECONDS', help: 'the worker is killed this long after that timeout', default: '60' },
    { name: 'PRUN_AGY_SIGNAL_GRACE_SECONDS', help: 'after a forwarded signal, SIGKILL follows after this', default: '5' },
    { name: 'ANTIGRAVITY_PREFLIGHT', help: 'auto | force | off', default: 'auto' },
    { name: 'ANTIGRAVITY_PREFLIGHT_TIMEOUT_SECONDS', help: 'per preflight command', default: '60' },
    { name: 'PRUN_SCRATCH_CWD', help: 'worker cwd instead of <state-dir>/work' },
    { name: 'PRUN_AGY_QUOTA_GATE', help: '0/off/false/disabled/no turns quota routing off' },
    { name: 'AGY_QUOTA_CACHE', help: 'caller-owned quota snapshot' },
    { name: 'PRUN_KEEP_ENV', help: 'comma-separated names let through the secret scrub' },
    { name: 'PRUN_AGY_SANDBOX', help: "1 adds Agy's --sandbox" },
    { name: 'PRUN_ISOLATE', help: 'worker in its own PID namespace: auto (where available), pid (required), off', default: 'auto' },
  ],
  epilog: `Any unambiguous prefix of an option works (--prompt, --unit), and so does --opt=value.

PRUN_AGY_SANDBOX=1 adds Agy's --sandbox. The flag is omitted by default because on Windows it
needs an elevated admin broker and raises a UAC prompt for every unit that runs a command. The
variable does not disable a sandbox enabled in Agy's own settings (enableTerminalSandbox).`,
  exitCodes: [
    { code: 0, meaning: 'result published, or the worker wrote its own result and succeeded' },
    {
      code: 2,
      meaning:
        'usage error, bad setting, existing result path or one whose publication temp name would not fit a file name, invalid UTF-8 prompt or conversation-id, `PRUN_ISOLATE=pid` where no PID namespace can be made (nothing created); an invalid `ANTIGRAVITY_PREFLIGHT(_TIMEOUT_SECONDS)` after STATE-DIR, with a FALLBACK',
    },
    {
      code: 70,
      meaning:
        'no agy binary (before STATE-DIR); preflight failure or unavailable model; launch or stdin failure; no or too short response; non-success status; FALLBACK could not be written; internal error',
    },
    {
      code: 75,
      meaning: "temporary refusal: quota (the model's group, or both groups, exhausted), or an earlier worker still runs in the same working directory (not started)",
    },
    {
      code: 124,
      meaning: 'a preflight command timed out, or the worker outlived `ANTIGRAVITY_DISPATCH_TIMEOUT_SECONDS` + `PRUN_AGY_KILL_GRACE_SECONDS` and was killed',
    },
    { code: 'N', meaning: 'agy exited with code N (including 2 for a flag agy rejects)' },
    { code: '128+n', meaning: 'the worker died of signal n, or the dispatcher got SIGINT/SIGTERM/SIGHUP (n) and stopped the worker' },
  ],
};

export const BINS: readonly BinSpec[] = [SPEC];
