import { z } from 'zod';

/** Readers detect a FALLBACK result by its first line alone, with exactly this pattern. */
export const FALLBACK_HEADER_PATTERN = /^# [A-Za-z0-9_-]+ result \(FALLBACK, /;

/** The first line of a FALLBACK result the Agy dispatcher writes. */
export function fallbackHeader(unitId: string): string {
  return `# ${unitId} result (FALLBACK, Agy wrote no final result)`;
}

/** The first line of a normal result. */
export function resultHeader(unitId: string): string {
  return `# ${unitId} result`;
}

/** Whether a result's first line marks it as a FALLBACK (a CR after the match is fine). */
export function isFallbackFirstLine(line: string): boolean {
  return FALLBACK_HEADER_PATTERN.test(line);
}

/** The first line of a text, without its line ending. */
export function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return end === -1 ? text : text.slice(0, end);
}

/**
 * The result shape every worker is asked for: the header, then Conclusion, Files, Open items and
 * Verification lines. The dispatcher's relay prompt quotes these lines verbatim.
 */
export function resultShapeLines(unitId: string): string[] {
  return [
    resultHeader(unitId),
    'Conclusion: <one line>',
    'Files: <files created or modified, or none>',
    'Open items: <blockers or follow-ups, or none>',
    'Verification: <commands or checks, or none>',
  ];
}

// Python's str.strip() whitespace: ASCII whitespace plus the separators \x1c-\x1f and the Unicode
// spaces. JavaScript's trim() differs (it strips U+FEFF, keeps \x1c-\x1f), and published results
// must match the original byte for byte.
const PY_WHITESPACE = new Set(
  [
    ...'\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000',
    ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
  ],
);

/** Python's `str.strip()` with no argument. */
export function pyStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && PY_WHITESPACE.has(text[start]!)) start += 1;
  while (end > start && PY_WHITESPACE.has(text[end - 1]!)) end -= 1;
  return text.slice(start, end);
}

export interface FallbackInput {
  unitId: string;
  /** One line: why no result was written. */
  reason: string;
  /** The worker's stdout capture (`tail`), whole; may be empty. */
  stdout?: string;
  /** The worker's stderr capture (`tail.stderr-tmp`), whole; may be empty. */
  stderr?: string;
}

/**
 * The FALLBACK result text, exactly as the original dispatcher writes it: header, the four
 * contract lines naming the reason, a blank line, then the captured output (whole, not
 * truncated) or `No worker output was captured.`, and one final newline.
 */
export function renderFallback({ unitId, reason, stdout = '', stderr = '' }: FallbackInput): string {
  const chunks: string[] = [];
  const out = pyStrip(stdout);
  const err = pyStrip(stderr);
  if (out) chunks.push(`## stdout events\n\n\`\`\`text\n${out}\n\`\`\``);
  if (err) chunks.push(`## stderr\n\n\`\`\`text\n${err}\n\`\`\``);
  const captured = chunks.length > 0 ? chunks.join('\n\n') : 'No worker output was captured.';
  return [
    fallbackHeader(unitId),
    `Conclusion: INCOMPLETE; ${reason}`,
    'Files: unknown',
    `Open items: ${reason}`,
    'Verification: none (dispatcher fallback)',
    '',
    captured,
  ].join('\n') + '\n';
}

/**
 * Where the dispatcher stores the worker's final response when the worker wrote the result file
 * itself: `<stem>.response<suffix>` beside it, with Python's pathlib stem/suffix rules
 * (`unit.md` → `unit.response.md`, `a.tar.gz` → `a.tar.response.gz`, `result` → `result.response`).
 */
export function responseSiblingPath(resultPath: string): string {
  const slash = resultPath.lastIndexOf('/');
  const dir = resultPath.slice(0, slash + 1);
  const name = resultPath.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  const hasSuffix = dot > 0 && dot < name.length - 1;
  const stem = hasSuffix ? name.slice(0, dot) : name;
  const suffix = hasSuffix ? name.slice(dot) : '';
  return `${dir}${stem}.response${suffix}`;
}

const ContractLine = z.string();

/** The parsed head of a result in the return contract. */
export const ResultSummarySchema = z.object({
  unitId: z.string(),
  fallback: z.boolean(),
  conclusion: ContractLine.nullable(),
  files: ContractLine.nullable(),
  openItems: ContractLine.nullable(),
  verification: ContractLine.nullable(),
});
export type ResultSummary = z.infer<typeof ResultSummarySchema>;

const HEADER = /^# ([A-Za-z0-9_-]+) result(?: \(FALLBACK, [^)]*\))?\s*$/;

/**
 * Read the head of a result text: the unit id, whether it is a FALLBACK, and the four contract
 * lines (null when a line is missing). Returns null when the first line is not a result header.
 */
export function parseResultSummary(text: string): ResultSummary | null {
  const lines = text.split(/\r?\n/);
  const header = HEADER.exec(lines[0] ?? '');
  if (!header) return null;
  const field = (label: string): string | null => {
    for (const line of lines.slice(1, 12)) {
      if (line.startsWith(`${label}:`)) return line.slice(label.length + 1).trim();
    }
    return null;
  };
  return {
    unitId: header[1]!,
    fallback: isFallbackFirstLine(lines[0] ?? ''),
    conclusion: field('Conclusion'),
    files: field('Files'),
    openItems: field('Open items'),
    verification: field('Verification'),
  };
}
