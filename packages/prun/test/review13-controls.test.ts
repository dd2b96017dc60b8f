// review13: gaps found trying the #13 controls and clean-up as a user would. Each test states
// what a user expects from the docs or the issue; they fail on main as of 5ac9e2a.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { latestStatus, ledger, planUnit, prun, prunBin, sandbox, waitFor, writePlan, type Sandbox } from './helpers.js';

let box: Sandbox | undefined;
const groups: number[] = [];
afterEach(() => {
  // Only the process groups this file started (prun spawned detached is its group's leader).
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  box?.cleanup();
  box = undefined;
});

function hookLines(root: string): string[] {
  const file = join(root, 'hooks.log');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** The units whose hook started (each run logs "<unit> <its shell's pid>"). */
function hookLog(root: string): string[] {
  return hookLines(root).map((line) => line.split(' ')[0]!);
}

/**
 * Whether a process of the hook's group (its shell leads it) still runs: a zombie does not count,
 * since a killed orphan waits on init to reap it.
 */
function groupAlive(root: string, unit: string): boolean {
  const pgid = hookLines(root).find((line) => line.startsWith(`${unit} `))!.split(' ')[1];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    // After the command's closing parenthesis: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (pgrp === pgid && state !== 'Z') return true;
  }
  return false;
}

describe('review13: --on-unit-done and Ctrl-C', () => {
  it('one Ctrl-C ends the batch: no further hook is started after it, and prun exits', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a'), planUnit('b')]);
    // A slow hook (a notifier that hangs): each run logs its unit first.
    const hook = 'echo "$PRUN_UNIT_ID $$" >> hooks.log; sleep 1000';
    const batch = execa(process.execPath, [prunBin, 'batch', 'plan.json', '--dir', 'fanout', '--jobs', '1', '--on-unit-done', hook], {
      cwd: box.root,
      env: box.env,
      extendEnv: false,
      reject: false,
      detached: true,
    });
    groups.push(batch.pid!);
    const dir = join(box.root, 'fanout');
    // Hook a runs (and hangs) while the batch goes on and settles b.
    await waitFor(() => hookLog(box!.root).includes('a') && existsSync(join(dir, 'ledger.jsonl')) && latestStatus(dir).b === 'done', 'hook a running and unit b done', 60_000);
    // Ctrl-C: SIGINT to the terminal's foreground process group (prun and the hook it runs).
    process.kill(-batch.pid!, 'SIGINT');
    const ended = await Promise.race([batch.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20_000))]);
    // On main prun kills hook a's shell with the group, then starts hook b and waits on it forever.
    expect(hookLog(box.root)).toEqual(['a']);
    expect(ended).toBe(true);
    // As an interrupted batch: 128+SIGINT, the hook's whole group gone, and b's hook named as not run.
    const result = await batch;
    expect(result.exitCode).toBe(130);
    expect(groupAlive(box.root, 'a')).toBe(false);
    expect(String(result.stderr)).toMatch(/^prun: --on-unit-done for unit a \(done\) was stopped: prun received SIGINT$/m);
    expect(String(result.stderr)).toMatch(/^prun: --on-unit-done not run for 1 unit\(s\) settled after prun received SIGINT: b$/m);
    expect(String(result.stdout)).toMatch(/exit=130$/m);
  }, 120_000);

  it('SIGTERM to prun alone (kill PID, timeout(1)) ends it while a hook hangs', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a')]);
    const batch = execa(process.execPath, [prunBin, 'batch', 'plan.json', '--dir', 'fanout', '--on-unit-done', 'echo "$PRUN_UNIT_ID $$" >> hooks.log; sleep 1000'], {
      cwd: box.root,
      env: box.env,
      extendEnv: false,
      reject: false,
      detached: true,
    });
    groups.push(batch.pid!);
    await waitFor(() => hookLog(box!.root).includes('a'), 'hook a running', 60_000);
    process.kill(batch.pid!, 'SIGTERM');
    const ended = await Promise.race([batch.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20_000))]);
    // On main: "prun: SIGTERM: stopping 0 running unit(s)", then prun waits on the hook forever.
    expect(ended).toBe(true);
    expect((await batch).exitCode).toBe(143);
    expect(groupAlive(box.root, 'a')).toBe(false);
  }, 120_000);

  it('a hook that never exits is stopped at PRUN_ON_UNIT_DONE_TIMEOUT and the batch ends as it would have', async () => {
    box = sandbox({ PRUN_ON_UNIT_DONE_TIMEOUT: '1' });
    writePlan(box.root, [planUnit('a')]);
    // The shell ignores SIGTERM, so only the group SIGKILL after the grace ends its sleep.
    const hook = 'echo "$PRUN_UNIT_ID $$" >> hooks.log; trap "" TERM; sleep 1000';
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--on-unit-done', hook], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(0);
    expect(String(run.stderr)).toMatch(/^prun: --on-unit-done for unit a \(done\) ran past its 1 s limit \(PRUN_ON_UNIT_DONE_TIMEOUT\) and was stopped; the batch goes on$/m);
    expect(groupAlive(box.root, 'a')).toBe(false);
  }, 120_000);

  it('a PRUN_ON_UNIT_DONE_TIMEOUT that is not a number of seconds is refused before anything starts', async () => {
    box = sandbox({ PRUN_ON_UNIT_DONE_TIMEOUT: 'soon' });
    writePlan(box.root, [planUnit('a')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout', '--on-unit-done', 'true'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(2);
    expect(String(run.stderr)).toMatch(/PRUN_ON_UNIT_DONE_TIMEOUT/);
    expect(existsSync(join(box.root, 'fanout'))).toBe(false);
  }, 60_000);
});

describe('review13: --dry-run checks --dir as the real run does', () => {
  it('--dir /proc/nope is refused (exit 2) by --dry-run, as by the real run', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a')]);
    const real = await prun(['batch', 'plan.json', '--dir', '/proc/nope'], { env: box.env, cwd: box.root });
    expect(real.exitCode).toBe(2);
    const dry = await prun(['batch', 'plan.json', '--dir', '/proc/nope', '--dry-run'], { env: box.env, cwd: box.root });
    // On main: exit 0, "dry run of plan.json: ... for /proc/nope; nothing was started or created".
    expect(dry.exitCode).toBe(2);
    expect(String(dry.stderr)).toMatch(/^prun: .*\/proc\/nope/m);
    // The very line the real run gives, from the same check, and nothing on stdout.
    expect(String(dry.stderr)).toBe(String(real.stderr));
    expect(String(dry.stdout)).toBe('');
  }, 60_000);
});

describe('review13: an empty DIR operand', () => {
  it("prun clean '' is a usage error (exit 2) and removes nothing, as --resume '' is; it never cleans the current directory's batch", async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(0);
    const dir = join(box.root, 'fanout');
    const stateDir = ledger(dir).at(-1)!.state_dir!;
    expect(existsSync(stateDir)).toBe(true);
    const resume = await prun(['batch', '--resume', ''], { env: box.env, cwd: dir });
    expect(resume.exitCode).toBe(2);
    // `prun clean "$DIR"` with DIR unset, typed from inside the batch directory.
    const clean = await prun(['clean', ''], { env: box.env, cwd: dir });
    // On main: exit 0, "removed a state dir ..." (the empty operand is the current directory).
    expect(clean.exitCode).toBe(2);
    expect(existsSync(stateDir)).toBe(true);
    // One shared check: every command that takes a batch directory says the same one line.
    for (const args of [['clean', ''], ['clean', ' ', '--dry-run'], ['cancel', '', 'a'], ['status', ''], ['status', '', '--json'], ['report-state', '--batch', ''], ['wait', ''], ['log', '', 'a'], ['status', '', '--watch']]) {
      const refused = await prun(args, { env: box.env, cwd: dir });
      expect(refused.exitCode, args.join(' ')).toBe(2);
      expect(String(refused.stdout), args.join(' ')).toBe('');
      expect(String(refused.stderr), args.join(' ')).toMatch(/^prun(-report-state)?: (--batch: )?the batch directory must not be empty$/);
    }
    expect(existsSync(stateDir)).toBe(true);
    expect(latestStatus(dir).a).toBe('done');
  }, 60_000);
});

describe('review13: prun cancel on a damaged ledger', () => {
  it('refuses with 102 and changes nothing, even when the unit looks settled', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a'), planUnit('b')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(0);
    const dir = join(box.root, 'fanout');
    const ledgerPath = join(dir, 'ledger.jsonl');
    // A bad line before the last: the last word on a unit can no longer be trusted.
    const lines = readFileSync(ledgerPath, 'utf8').split('\n').filter(Boolean);
    lines.splice(1, 0, '{"not": "an entry"}');
    writeFileSync(ledgerPath, `${lines.join('\n')}\n`);
    const before = readFileSync(ledgerPath, 'utf8');
    const cancel = await prun(['cancel', 'fanout', 'a'], { env: box.env, cwd: box.root });
    // On main: "not cancelled a: it had already settled (done)", exit 0.
    expect(cancel.exitCode).toBe(102);
    expect(String(cancel.stdout)).toBe('');
    expect(String(cancel.stderr)).toMatch(/^prun: ledger line 2 of \S+ledger\.jsonl is not a valid entry; nothing was changed/);
    expect(readFileSync(ledgerPath, 'utf8')).toBe(before);
    expect(existsSync(join(dir, 'cancel'))).toBe(false);
  }, 60_000);
});

describe('review13: prun clean on what is not a batch, or a damaged one, creates nothing', () => {
  it('a file, a plan.json that is a directory, and a damaged ledger are refused without a driver.lock', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a')]);
    const plan = readFileSync(join(box.root, 'plan.json'), 'utf8');
    // `prun clean plan.json`: the plan, typed where the batch directory goes.
    const file = await prun(['clean', 'plan.json'], { env: box.env, cwd: box.root });
    expect(file.exitCode).toBe(2);
    expect(String(file.stderr)).toBe(`prun: not a batch directory (not a directory): ${join(box.root, 'plan.json')}`);
    // A directory where plan.json should be a file.
    mkdirSync(join(box.root, 'w4', 'plan.json'), { recursive: true });
    writeFileSync(join(box.root, 'w4', 'ledger.jsonl'), '');
    for (const args of [['clean', 'w4'], ['clean', 'w4', '--dry-run'], ['report-state', '--batch', 'w4']]) {
      const refused = await prun(args, { env: box.env, cwd: box.root });
      expect(refused.exitCode, args.join(' ')).toBe(2);
      expect(String(refused.stderr), args.join(' ')).toMatch(/^prun(-report-state)?: (--batch: )?not a batch directory \(plan\.json is not a regular file\): \S+\/w4$/);
    }
    expect(existsSync(join(box.root, 'w4', 'driver.lock'))).toBe(false);
    // A ledger that cannot be read (a directory): 102, and still no lock file left behind.
    mkdirSync(join(box.root, 'w3', 'ledger.jsonl'), { recursive: true });
    writeFileSync(join(box.root, 'w3', 'plan.json'), plan);
    const damaged = await prun(['clean', 'w3'], { env: box.env, cwd: box.root });
    expect(damaged.exitCode).toBe(102);
    expect(existsSync(join(box.root, 'w3', 'driver.lock'))).toBe(false);
  }, 60_000);
});

describe('review13: prun clean --snapshot advice', () => {
  it('a group/world-writable default snapshot dir keeps the state dir (exit 1) with advice prun clean can follow: no --dest', async () => {
    box = sandbox();
    writePlan(box.root, [planUnit('a')]);
    const run = await prun(['batch', 'plan.json', '--dir', 'fanout'], { env: box.env, cwd: box.root });
    expect(run.exitCode).toBe(0);
    const stateDir = ledger(join(box.root, 'fanout')).at(-1)!.state_dir!;
    // The default location (no XDG_STATE_HOME: $HOME/.local/state/...), made world-writable.
    const snapshots = join(box.env.HOME!, '.local', 'state', 'anywhere-agents', 'prun', 'snapshots');
    mkdirSync(snapshots, { recursive: true });
    chmodSync(snapshots, 0o777);
    const clean = await prun(['clean', 'fanout', '--snapshot'], { env: box.env, cwd: box.root });
    expect(clean.exitCode).toBe(1);
    expect(existsSync(stateDir)).toBe(true);
    const stderr = String(clean.stderr);
    expect(stderr).toContain(`${snapshots} is group- or world-accessible (mode 0777)`);
    // On main: "... use a private directory elsewhere (omit --dest for the default location)".
    expect(stderr).not.toContain('--dest');
    expect(stderr).toContain('set XDG_STATE_HOME to a private directory');
    // The advice works as typed.
    const advised = await prun(['clean', 'fanout', '--snapshot'], { env: { ...box.env, XDG_STATE_HOME: join(box.root, 'state') }, cwd: box.root });
    expect(advised.exitCode).toBe(0);
    expect(existsSync(stateDir)).toBe(false);
  }, 60_000);
});
