import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { THREAD_THRESHOLD_BYTES } from '../src/index.js';
import { HAVE_UNZIP, it, makeUnit, runBin, sha256, type JsonOutcome } from './helpers.js';

const HAVE_PYTHON = spawnSync('python3', ['-c', 'import zipfile'], { stdio: 'ignore' }).status === 0;

// Python's zipfile, as the original tool's users read snapshots: every member's CRC-32 checked
// (testzip), both members STORED and in order, tail.bin's bytes and the manifest as written.
const READ_WITH_ZIPFILE = `
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    bad = archive.testzip()
    infos = archive.infolist()
    digest = hashlib.sha256()
    with archive.open('tail.bin') as member:
        for piece in iter(lambda: member.read(1 << 20), b''):
            digest.update(piece)
    print(json.dumps({
        'bad': bad,
        'names': [info.filename for info in infos],
        'methods': [info.compress_type for info in infos],
        'tail_size': archive.getinfo('tail.bin').file_size,
        'tail_sha256': digest.hexdigest(),
        'manifest': json.loads(archive.read('manifest.json')),
    }))
`;

interface ZipfileView {
  bad: string | null;
  names: string[];
  methods: number[];
  tail_size: number;
  tail_sha256: string;
  manifest: Record<string, unknown>;
}

// An empty tail, a small one (hashed inline) and one past the threshold (hashed on the thread,
// read back in several slots, a short last piece): the layouts the writer produces.
const SIZES = { empty: 0, small: 1500, threaded: THREAD_THRESHOLD_BYTES + 5 * 1024 * 1024 + 3 };

describe.concurrent('python3 zipfile reads every snapshot (skipped without python3)', () => {
  for (const [name, size] of Object.entries(SIZES)) {
    it.skipIf(!HAVE_PYTHON)(`${name} tail (${size} bytes)`, async ({ root }) => {
      const payload = Buffer.alloc(size);
      for (let i = 0; i + 4 <= size; i += 4096) payload.writeUInt32BE(i / 4096 + 1, i);
      const unit = makeUnit(root, name, payload);
      const output = join(root, 'd', `${name}.zip`);
      const run = await runBin(['--unit', unit, '--output', output, '--json'], { timeoutMs: 60_000 });
      expect(run.code).toBe(0);
      const { manifest } = JSON.parse(run.stdout) as JsonOutcome;
      const read = spawnSync('python3', ['-c', READ_WITH_ZIPFILE, output], { encoding: 'utf8' });
      expect(read.stderr).toBe('');
      const view = JSON.parse(read.stdout) as ZipfileView;
      expect(view).toEqual({
        bad: null,
        names: ['tail.bin', 'manifest.json'],
        methods: [0, 0],
        tail_size: size,
        tail_sha256: sha256(payload),
        manifest,
      });
      if (HAVE_UNZIP) expect(spawnSync('unzip', ['-tq', output]).status).toBe(0);
    });
  }
});
