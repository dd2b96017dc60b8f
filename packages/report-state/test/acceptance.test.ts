// As a new user would: an interrupted fan-out of fake-agy units left state dirs in the
// temporary directory; `prun-report-state --summary` tells which results survived.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { STATE_FILES, stateDirName } from '@prun/unit-state';
import { cleanupTempDirs, runBin, tempDir, type JsonReport } from './helpers.js';

afterEach(cleanupTempDirs);

const streamTail = (unitId: string, lines: number): string =>
  Array.from({ length: lines }, (_, i) => `{"type":"message","unit":"${unitId}","seq":${i},"text":"working"}\n`).join('');

it('after an interrupted fan-out, --summary tells present, missing and unresolved results apart', () => {
  const tmp = tempDir();
  const results = join(tmp, 'agent-io', 'results');
  mkdirSync(results, { recursive: true });
  const dispatcherPid = 4242;
  const units = [
    { id: 'survey_a', result: 'written', tailLines: 40 },
    { id: 'survey_b', result: 'empty', tailLines: 20 },
    { id: 'survey_c', result: 'never-written', tailLines: 30 },
    { id: 'survey_d', result: 'no-entry', tailLines: 10 },
  ] as const;
  const dirs = new Map<string, string>();
  units.forEach((unit, i) => {
    const dir = join(tmp, stateDirName({ cwd: '/work/repo', unitId: unit.id, pid: dispatcherPid + i, nonce: `${i}`.repeat(16) }));
    dirs.set(unit.id, dir);
    mkdirSync(join(dir, STATE_FILES.workDir), { recursive: true });
    writeFileSync(join(dir, STATE_FILES.tail), streamTail(unit.id, unit.tailLines));
    writeFileSync(join(dir, STATE_FILES.dispatchPid), `${dispatcherPid + i}\n`);
    writeFileSync(join(dir, STATE_FILES.timestamp), '1764460800\n');
    writeFileSync(join(dir, STATE_FILES.model), 'gemini-3.8-flash-high\n');
    const resultPath = join(results, `${unit.id}.md`);
    if (unit.result !== 'no-entry') writeFileSync(join(dir, STATE_FILES.resultFile), `${resultPath}\n`);
    if (unit.result === 'written') writeFileSync(resultPath, `# ${unit.id} result\nConclusion: done\n`);
    if (unit.result === 'empty') writeFileSync(resultPath, '');
  });
  mkdirSync(join(tmp, 'unrelated-dir'));

  // No --root: the default root is the system temporary directory (TMPDIR here).
  const text = runBin(['--summary'], { env: { TMPDIR: tmp }, cwd: tmp });
  expect(text.status).toBe(0);
  expect(text.stderr).toBe('');
  const rows = new Map(
    text.stdout
      .split('\n')
      .filter((line) => line.startsWith('prun-task-'))
      .map((line) => [line.split(/\s+/)[0]!, line.split(/\s+/).slice(1, 3)]),
  );
  const rowOf = (id: string) => rows.get(join(dirs.get(id)!).slice(tmp.length + 1));
  expect(rowOf('survey_a')).toEqual(['present', 'resolved']);
  expect(rowOf('survey_b')).toEqual(['empty', 'resolved']);
  expect(rowOf('survey_c')).toEqual(['missing', 'resolved']);
  expect(rowOf('survey_d')).toEqual(['unknown', 'absent-entry']);
  expect(rows.size).toBe(4);
  const bytesOf = (id: string) => streamTail(id, units.find((u) => u.id === id)!.tailLines).length;
  const missingOrEmptyBytes = bytesOf('survey_b') + bytesOf('survey_c');
  expect(text.stdout).toContain(`units 4   missing-or-empty result 2 units, 0.0 MiB\n`);
  expect(text.stdout).toContain('  unresolved    : 1 units, 0.0 MiB (tail present, result never classified)\n');
  expect(text.stdout).toContain('  by result     : present=1 empty=1 missing=1 unknown=1\n');
  expect(text.stdout).toContain('  by path state : resolved=3 absent-entry=1\n');
  expect(text.stdout).toContain('Snapshotting a tail is the only safe operation offered here.');

  const json = runBin(['--summary', '--json', '--sort', 'tail-bytes-desc'], { env: { TMPDIR: tmp } });
  const report = JSON.parse(json.stdout) as JsonReport;
  expect(report.roots).toEqual([tmp]);
  expect(report.units.map((u) => u.unit)).toEqual(['survey_a', 'survey_c', 'survey_b', 'survey_d'].map((id) => dirs.get(id)));
  expect(report.units.find((u) => u.unit === dirs.get('survey_c'))?.result_target).toBe(join(results, 'survey_c.md'));
  expect(report.summary).toMatchObject({
    missing_or_empty_result_units: 2,
    missing_or_empty_result_bytes: missingOrEmptyBytes,
    unresolved_units: 1,
    unresolved_bytes: bytesOf('survey_d'),
  });
});
