// Drives a generated completion script in the real shell, as a user's TAB would, and returns the
// candidates it offers. bash: the script's function with COMP_WORDS/COMP_CWORD set, as readline
// calls it; zsh: the function with `words`/CURRENT set and compadd/_files recording what they
// are asked to offer; fish: its own `complete -C`. The script is passed in the environment, so
// nothing is written anywhere; the caller runs this in an empty directory and checks it stays so.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether the shell is installed; a test that needs it is skipped, visibly, when it is not. */
export function haveShell(shell) {
  return spawnSync(shell, ['-c', 'exit 0'], { stdio: 'ignore' }).status === 0;
}

/**
 * Run `fn` with the environment variables that give fish a home of its own: it keeps history
 * and universal variables under its XDG dirs, which must stay away from the directory under
 * test and from the user's home. The home is made for this call and removed after it.
 */
function withFishHome(fn) {
  const home = mkdtempSync(join(tmpdir(), 'prun-completion-fish-'));
  try {
    return fn({ XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data'), XDG_CACHE_HOME: join(home, 'cache') });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function words(line) {
  const list = line.split(/ +/);
  if (list[0] === '') list.shift();
  return list;
}

const ZSH_STUBS = [
  "compdef() { :; }",
  "# As zsh's own: -P PATTERN moves the matching head of the current word out of PREFIX.",
  "compset() { [[ $1 == -P ]] && PREFIX=${PREFIX#${~2}}; }",
  "# As zsh's own: offers only the words that start with the current word (PREFIX).",
  "compadd() {",
  "  while (( $# )); do",
  "    case $1 in (--) shift; break ;; (-[JVXxPSpsrRMFWEIiOAD]) shift 2 ;; (-*) shift ;; (*) break ;; esac",
  "  done",
  "  local w",
  "  for w in \"$@\"; do [[ $w == \"$PREFIX\"* ]] && print -r -- \"$w\"; done",
  "}",
  "_files() { if [[ $1 == -/ ]]; then print -r -- '<dirs>'; else print -r -- '<files>'; fi; }",
  "_command_names() { print -r -- '<commands>'; }",
].join('\n');

/**
 * The candidates `script` offers for `line` (the text before the cursor; a trailing space means
 * an empty current word). bash and fish list real files for file values; zsh shows `<files>`,
 * `<dirs>` or `<commands>` where it would call its own completers. With `descriptions`, each
 * entry stays as the shell printed it: for fish, `candidate<TAB>description`.
 */
export function complete(shell, script, line, { cwd, env = process.env, descriptions = false } = {}) {
  const list = words(line);
  const bin = list[0];
  let program;
  let args;
  const childEnv = { ...env, PRUN_COMPLETION_SCRIPT: script, PRUN_COMPLETION_LINE: line };
  if (shell === 'bash') {
    const fn = new RegExp(`^complete -F (\\S+) ${bin}$`, 'm').exec(script)?.[1];
    if (!fn) throw new Error(`no bash completion function for ${bin}`);
    const quoted = list.map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
    program = 'bash';
    args = [
      '--norc',
      '--noprofile',
      '-c',
      `eval "$PRUN_COMPLETION_SCRIPT"; COMP_WORDS=(${quoted}); COMP_CWORD=${list.length - 1}; COMP_LINE="$PRUN_COMPLETION_LINE"; COMP_POINT=\${#COMP_LINE}; ${fn} ${bin}; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ];
  } else if (shell === 'zsh') {
    const fn = new RegExp(`^compdef (\\S+) ${bin}$`, 'm').exec(script)?.[1];
    if (!fn) throw new Error(`no zsh completion function for ${bin}`);
    const quoted = list.map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
    program = 'zsh';
    args = ['-f', '-c', `${ZSH_STUBS}\neval "$PRUN_COMPLETION_SCRIPT"; words=(${quoted}); CURRENT=${list.length}; PREFIX="$words[CURRENT]"; ${fn}`];
  } else {
    program = 'fish';
    args = ['-N', '-c', 'eval $PRUN_COMPLETION_SCRIPT; complete -C "$PRUN_COMPLETION_LINE"'];
  }
  const spawnShell = (extraEnv = {}) => spawnSync(program, args, { cwd, env: { ...childEnv, ...extraEnv }, encoding: 'utf8', timeout: 20_000 });
  const result = shell === 'fish' ? withFishHome(spawnShell) : spawnShell();
  if (result.status !== 0 || result.stderr !== '') {
    throw new Error(`${shell} completion of '${line}' failed (${result.status}): ${result.stderr}`);
  }
  return result.stdout
    .split('\n')
    .filter((entry) => entry !== '')
    .map((entry) => (descriptions ? entry : entry.split('\t')[0]));
}
