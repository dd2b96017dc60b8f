// The progress lines built from pi's records, against the same expressions of multi_agent.py run
// by python3: str() of a JSON value ("retry {}/{}", "compaction ({})"), excerpt's str.split()
// and short_args' json.dumps(ensure_ascii=False, separators=(",", ":")).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { RunTracker } from '../src/index.js';

const python3 = spawnSync('python3', ['-c', 'pass']).status === 0;

const PYTHON = String.raw`
import json, sys
def excerpt(text, limit=120):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
def short_args(args):
    if isinstance(args, dict):
        for key in ("command", "path", "file_path", "pattern", "query", "url"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return excerpt(value)
    return excerpt(json.dumps(args, ensure_ascii=False, separators=(",", ":")))
out = []
for record in json.load(sys.stdin):
    kind = record.get("type")
    if kind == "auto_retry_start":
        out.append("retry {}/{}: {}".format(record.get("attempt"), record.get("maxAttempts"), excerpt(record.get("errorMessage") or "")))
    elif kind == "compaction_start":
        out.append("compaction ({})".format(record.get("reason", "?")))
    else:
        out.append("{} {}".format(record.get("toolName"), short_args(record.get("args"))))
print(json.dumps(out))
`;

const RECORDS = [
  { type: 'auto_retry_start', attempt: 1, maxAttempts: 3, errorMessage: 'boom' },
  { type: 'auto_retry_start', attempt: 1.5, maxAttempts: null, errorMessage: 'a\x1cb\x85c\ufeffd  e' },
  { type: 'auto_retry_start', attempt: [1, 'two', null], maxAttempts: { k: true } },
  { type: 'auto_retry_start', attempt: 1e-7, maxAttempts: 1e21 },
  { type: 'compaction_start', reason: null },
  { type: 'compaction_start', reason: ['threshold', 0.25] },
  { type: 'compaction_start' },
  { type: 'tool_execution_start', toolName: 'bash', args: { command: 'ls\u2003 -l' } },
  { type: 'tool_execution_start', toolName: 'edit', args: { n: 1e-7, s: 'é\x7f', list: [1.5, null] } },
  { type: 'tool_execution_start', toolName: 'none' },
];

describe('progress lines read as multi_agent.py writes them', () => {
  it.skipIf(!python3)(`str(), excerpt and short_args agree with python3${python3 ? '' : ' (skipped: python3 is missing)'}`, () => {
    const out = spawnSync('python3', ['-c', PYTHON], { input: JSON.stringify(RECORDS), encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const expected = JSON.parse(out.stdout) as string[];
    const tracker = new RunTracker({ input: 1 });
    const actual = RECORDS.map((record) => tracker.handleLine(JSON.stringify(record)).progress.join('|'));
    expect(actual).toEqual(expected);
  });
});
