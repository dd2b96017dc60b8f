import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe as baseDescribe, expect } from 'vitest';
import {
  HAVE_MKFIFO,
  HAVE_UNZIP,
  HAVE_ZIPINFO,
  MANIFEST_KEYS,
  baseEnv,
  it,
  makeUnit,
  readArchive,
  runBin,
  sha256,
  tailPath,
  tempLeftovers,
  type JsonOutcome,
} from './helpers.js';

// Each test has its own temp root, so the light bin runs overlap.
const describe = baseDescribe.concurrent;

describe('byte contract', () => {
  it('preserves the exact bytes and records a complete bounded read', async ({ root }) => {
    const payload = Buffer.concat(Array.from({ length: 40 }, () => Buffer.from(Array.from({ length: 256 }, (_, i) => i))));
    const unit = makeUnit(root, 'bytes', payload);
    const output = join(root, 'dest', 'snap.zip');
    const run = await runBin(['--unit', unit, '--output', output, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const outcome = JSON.parse(run.stdout) as JsonOutcome;
    expect(Object.keys(outcome)).toEqual(['published', 'manifest', 'warning']);
    expect(Object.keys(outcome.manifest)).toEqual(MANIFEST_KEYS);
    expect(outcome.published).toBe(output);
    expect(outcome.warning).toBeNull();
    expect(outcome.manifest).toMatchObject({
      schema_version: 1,
      source_path: tailPath(unit),
      source_size_at_open: payload.length,
      bytes_copied: payload.length,
      sha256: sha256(payload),
      source_may_be_live: true,
      capture_outcome: 'complete_bounded_read',
    });
    expect(outcome.manifest.captured_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(String(outcome.manifest.note)).toContain('do not prove');
    const back = await readArchive(output);
    expect(back.names).toEqual(['tail.bin', 'manifest.json']);
    expect(back.methods).toEqual([0, 0]);
    expect(back.members.get('tail.bin')!.equals(payload)).toBe(true);
    const archived = back.members.get('manifest.json')!.toString('utf8');
    expect(archived.endsWith('\n')).toBe(false);
    expect(JSON.parse(archived)).toEqual(outcome.manifest);
    expect(Object.keys(JSON.parse(archived) as object)).toEqual(MANIFEST_KEYS);
    expect(run.stdout.endsWith('}\n')).toBe(true);
  });

  it('prints the text summary with grouped counts and the safety lines', async ({ root }) => {
    const unit = makeUnit(root, 'text', Buffer.alloc(1500, 7));
    const output = join(root, 'dest', 'text.zip');
    const run = await runBin(['--unit', unit, '--output', output]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      [
        `published ${output}`,
        '  1,500 of 1,500 bytes  complete_bounded_read',
        `  sha256 ${sha256(Buffer.alloc(1500, 7))}`,
        '  This is a bounded best-effort copy of a possibly live file.',
        '  It is not a result and does not mean the unit is finished.',
        '',
      ].join('\n'),
    );
  });

  it('snapshots an empty tail as 0 of 0 bytes', async ({ root }) => {
    const unit = makeUnit(root, 'empty', '');
    const output = join(root, 'dest', 'empty.zip');
    const run = await runBin(['--unit', unit, '--output', output]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('  0 of 0 bytes  complete_bounded_read\n');
    expect((await readArchive(output)).members.get('tail.bin')!.length).toBe(0);
  });

  it('refuses a missing tail with exit 4 and publishes nothing', async ({ root }) => {
    const unit = makeUnit(root, 'gone', null);
    const dest = join(root, 'dest');
    const run = await runBin(['--unit', unit, '--dest', dest]);
    expect(run.code).toBe(4);
    const source = tailPath(unit);
    expect(run.stderr).toBe(
      `prun-snapshot-tail: error: cannot open ${source}: [Errno 2] No such file or directory: '${source}'\n`,
    );
    expect(readdirSync(dest)).toEqual([]);
  });
});

describe('regular sources only', () => {
  it('copies a symlink to a regular file', async ({ root }) => {
    const unit = makeUnit(root, 'link', null);
    writeFileSync(join(root, 'real'), 'linked payload');
    symlinkSync(join(root, 'real'), tailPath(unit));
    const run = await runBin(['--unit', unit, '--output', join(root, 'd', 'l.zip'), '--json']);
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as JsonOutcome).manifest.bytes_copied).toBe(14);
  });

  it('refuses a symlink to /dev/null (no empty capture is published)', async ({ root }) => {
    const unit = makeUnit(root, 'devnull', null);
    symlinkSync('/dev/null', tailPath(unit));
    const dest = join(root, 'd');
    const run = await runBin(['--unit', unit, '--dest', dest]);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(`prun-snapshot-tail: error: ${tailPath(unit)} is not a regular file; refusing to snapshot it\n`);
    expect(readdirSync(dest)).toEqual([]);
  });

  it('refuses a directory tail', async ({ root }) => {
    const unit = makeUnit(root, 'dirtail', null);
    mkdirSync(tailPath(unit));
    const run = await runBin(['--unit', unit, '--dest', join(root, 'd')]);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('is not a regular file');
  });

  it.skipIf(!HAVE_MKFIFO)('refuses a FIFO tail promptly instead of blocking on it (skipped without mkfifo)', async ({ root }) => {
    const unit = makeUnit(root, 'fifo', null);
    expect(spawnSync('mkfifo', [tailPath(unit)]).status).toBe(0);
    const dest = join(root, 'd');
    const run = await runBin(['--unit', unit, '--dest', dest], { timeoutMs: 15_000 });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('not a regular file');
    expect(run.ms).toBeLessThan(10_000);
    expect(readdirSync(dest)).toEqual([]);
  });
});

describe('usage errors (exit 2)', () => {
  it('refuses a unit that is not a directory and creates nothing', async ({ root }) => {
    const xdg = join(root, 'xdg');
    const run = await runBin(['--unit', join(root, 'nope')], { env: baseEnv({ XDG_STATE_HOME: xdg }) });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`prun-snapshot-tail: error: ${join(root, 'nope')} is not a directory\n`);
    expect(existsSync(xdg)).toBe(false);
  });

  it.for(['out/', 'sub/.', 'sub/..', ' lead.zip', 'trail.zip '])('refuses an --output that traverses: %j', async (name, { root }) => {
    const unit = makeUnit(root, 'trav', 'x');
    const run = await runBin(['--unit', unit, '--output', name], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('prun-snapshot-tail: error: output name may not traverse\n');
    expect(readdirSync(root)).toEqual(['prun-task-trav']);
  });

  it('names the conflict between --dest and --output, even with an empty --output', async ({ root }) => {
    const run = await runBin(['--unit', root, '--dest', root, '--output', '']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('prun-snapshot-tail: error: argument --output: not allowed with argument --dest\n');
    expect(run.stderr.startsWith('prun-snapshot-tail: usage: ')).toBe(true);
  });

  it('requires --unit', async () => {
    const run = await runBin(['--json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error: the following arguments are required: --unit');
  });

  it('rejects a stray argument', async ({ root }) => {
    const run = await runBin(['--unit', root, 'extra']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error: unrecognized arguments: extra');
  });

  it('prints help with the exit codes, and the version', async () => {
    const help = await runBin(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('exit codes:');
    for (const code of ['0 ', '2 ', '3 ', '4 ', '5 ', '6 ', '70 ']) expect(help.stdout).toContain(`\n  ${code}`);
    const version = await runBin(['--version']);
    expect(version.code).toBe(0);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version.stdout).toBe(`${pkg.version}\n`);
  });
});

describe('destination', () => {
  it('creates the default destination 0700 and the archive 0600 even under umask 0', async ({ root }) => {
    const unit = makeUnit(root, 'modes', 'data');
    const xdg = join(root, 'state');
    const run = await runBin(['--unit', unit, '--json'], { env: baseEnv({ XDG_STATE_HOME: xdg }), umask0: true });
    expect(run.code).toBe(0);
    const snapshots = join(xdg, 'anywhere-agents', 'prun', 'snapshots');
    const { published } = JSON.parse(run.stdout) as JsonOutcome;
    expect(published.startsWith(`${snapshots}/`)).toBe(true);
    expect(published.slice(snapshots.length + 1)).toMatch(/^snapshot-\d{8}T\d{6}Z-[0-9a-f]{8}\.zip$/);
    expect(statSync(snapshots).mode & 0o777).toBe(0o700);
    expect(statSync(published).mode & 0o777).toBe(0o600);
    // Parents are not ours to lock down: they follow the (here: zero) umask.
    expect(statSync(join(xdg, 'anywhere-agents')).mode & 0o777).toBe(0o777);
    expect(tempLeftovers(snapshots)).toEqual([]);
  });

  it('falls back to ~/.local/state when XDG_STATE_HOME is empty', async ({ root }) => {
    const unit = makeUnit(root, 'home', 'data');
    const home = join(root, 'home');
    const run = await runBin(['--unit', unit, '--json'], { env: baseEnv({ HOME: home, XDG_STATE_HOME: '' }) });
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as JsonOutcome).published.startsWith(`${home}/.local/state/anywhere-agents/prun/snapshots/snapshot-`)).toBe(true);
  });

  it('keeps a relative XDG_STATE_HOME relative in the published path', async ({ root }) => {
    const unit = makeUnit(root, 'rel', 'data');
    const run = await runBin(['--unit', unit], { cwd: root, env: baseEnv({ XDG_STATE_HOME: 'relxdg' }) });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^published relxdg\/anywhere-agents\/prun\/snapshots\/snapshot-\d{8}T\d{6}Z-[0-9a-f]{8}\.zip\n/);
  });

  // Group-writable and shared directories get other advice: see dest-advice.test.ts.
  it.for([0o755, 0o750, 0o701])('refuses an existing destination with mode %o and says how to fix it', async (mode, { root }) => {
    const unit = makeUnit(root, 'broad', 'data');
    const dest = join(root, 'broad');
    mkdirSync(dest);
    chmodSync(dest, mode);
    const run = await runBin(['--unit', unit, '--dest', dest]);
    expect(run.code).toBe(6);
    const shown = mode.toString(8).padStart(4, '0');
    expect(run.stderr).toBe(
      `prun-snapshot-tail: error: ${dest} is group- or world-accessible (mode ${shown}); refusing to write snapshots there. Fix with: chmod 700 ${dest}\n`,
    );
    expect(readdirSync(dest)).toEqual([]);
    expect(statSync(dest).mode & 0o7777).toBe(mode);
  });

  it('accepts a private directory with only the sticky bit set', async ({ root }) => {
    const unit = makeUnit(root, 'sticky', 'data');
    const dest = join(root, 'sticky');
    mkdirSync(dest);
    chmodSync(dest, 0o1700);
    const run = await runBin(['--unit', unit, '--dest', dest]);
    expect(run.code).toBe(0);
  });

  it('reports a destination it cannot create (exit 6)', async ({ root }) => {
    const unit = makeUnit(root, 'blocked', 'data');
    const blocker = join(root, 'afile');
    writeFileSync(blocker, 'in the way');
    const run = await runBin(['--unit', unit, '--dest', blocker]);
    expect(run.code).toBe(6);
    expect(run.stderr).toBe(`prun-snapshot-tail: error: cannot create ${blocker}: [Errno 17] File exists: '${blocker}'\n`);
  });
});

describe('publication', () => {
  it('never replaces an existing file (exit 3, bytes unchanged, no temporary left)', async ({ root }) => {
    const unit = makeUnit(root, 'pub', 'payload'.repeat(100));
    const output = join(root, 'd', 'same.zip');
    expect((await runBin(['--unit', unit, '--output', output])).code).toBe(0);
    const before = readFileSync(output);
    writeFileSync(tailPath(unit), 'changed since');
    const second = await runBin(['--unit', unit, '--output', output]);
    expect(second.code).toBe(3);
    expect(second.stderr).toBe(`prun-snapshot-tail: error: ${output} already exists; refusing to replace\n`);
    expect(readFileSync(output).equals(before)).toBe(true);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

  it('treats an --output naming an existing directory as a collision', async ({ root }) => {
    const unit = makeUnit(root, 'dirout', 'data');
    mkdirSync(join(root, 'd', 'taken'), { recursive: true });
    chmodSync(join(root, 'd'), 0o700);
    const run = await runBin(['--unit', unit, '--output', join(root, 'd', 'taken')]);
    expect(run.code).toBe(3);
    expect(tempLeftovers(join(root, 'd'))).toEqual([]);
  });

});

describe('independent reader', () => {
  it.skipIf(!HAVE_UNZIP || !HAVE_ZIPINFO)(
    'unzip -t / unzip -l / zipinfo accept the archive as two stored members (skipped without Info-ZIP)',
    async ({ root }) => {
      const stream = '{"type":"init","session_id":"c1"}\r\n{"type":"message","content":"half a th\0ought"}\n';
      const unit = makeUnit(root, 'fanout', stream);
      const output = join(root, 'd', 'interrupted.zip');
      expect((await runBin(['--unit', unit, '--output', output])).code).toBe(0);
      const test = spawnSync('unzip', ['-t', output], { encoding: 'utf8' });
      expect(test.status).toBe(0);
      expect(test.stdout).toContain('No errors detected');
      const list = spawnSync('unzip', ['-l', output], { encoding: 'utf8' });
      expect(list.stdout).toMatch(/\btail\.bin\n[\s\S]*\bmanifest\.json\n/);
      const info = spawnSync('zipinfo', [output], { encoding: 'utf8' });
      const memberLines = info.stdout.split('\n').filter((line) => /(tail\.bin|manifest\.json)$/.test(line));
      expect(memberLines).toHaveLength(2);
      for (const line of memberLines) expect(line).toMatch(/ stor /);
      const extracted = spawnSync('unzip', ['-p', output, 'tail.bin']);
      expect(extracted.stdout.equals(Buffer.from(stream, 'utf8'))).toBe(true);
    },
  );
});
