import { pyStrip } from '@prun/kit/py';

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

export { pyStrip };

/** What a FALLBACK's Conclusion line says before its reason. */
export const FALLBACK_CONCLUSION_PREFIX = 'INCOMPLETE; ';

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
 * One capture as a FALLBACK section: whether its stripped text is empty (then the section is
 * left out), and how to write that text (Python-stripped, universal newlines) in pieces. The
 * dispatcher streams a capture file this way without holding it.
 */
export interface FallbackCapture {
  readonly empty: boolean;
  writeTo(write: (piece: string) => void): void;
}

export interface StreamedFallbackInput {
  unitId: string;
  /** One line: why no result was written. */
  reason: string;
  stdout: FallbackCapture;
  stderr: FallbackCapture;
}

/** A capture held as text: `pyStrip` of it is the section. */
function textCapture(text: string): FallbackCapture {
  const stripped = pyStrip(text);
  return { empty: stripped === '', writeTo: (write) => write(stripped) };
}

/**
 * The FALLBACK result, exactly as the original dispatcher writes it, in pieces through `write`:
 * header, the four contract lines naming the reason, a blank line, then the captured output
 * (whole, not truncated) or `No worker output was captured.`, and one final newline. The one
 * home of the layout: `renderFallback` is this, collected.
 */
export function writeFallback({ unitId, reason, stdout, stderr }: StreamedFallbackInput, write: (piece: string) => void): void {
  write(
    [
      fallbackHeader(unitId),
      `Conclusion: ${FALLBACK_CONCLUSION_PREFIX}${reason}`,
      'Files: unknown',
      `Open items: ${reason}`,
      'Verification: none (dispatcher fallback)',
      '',
      '',
    ].join('\n'),
  );
  const sections = (
    [
      ['## stdout events', stdout],
      ['## stderr', stderr],
    ] as const
  ).filter(([, capture]) => !capture.empty);
  if (sections.length === 0) write('No worker output was captured.');
  sections.forEach(([title, capture], index) => {
    write(`${index > 0 ? '\n\n' : ''}${title}\n\n\`\`\`text\n`);
    capture.writeTo(write);
    write('\n```');
  });
  write('\n');
}

/** The FALLBACK result text (`writeFallback` of the two captures held as text). */
export function renderFallback({ unitId, reason, stdout = '', stderr = '' }: FallbackInput): string {
  const pieces: string[] = [];
  writeFallback({ unitId, reason, stdout: textCapture(stdout), stderr: textCapture(stderr) }, (piece) => pieces.push(piece));
  return pieces.join('');
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

/** The parsed head of a result in the return contract (zod: `ResultSummarySchema` in `@prun/unit-state/schemas`). */
export interface ResultSummary {
  unitId: string;
  fallback: boolean;
  conclusion: string | null;
  files: string | null;
  openItems: string | null;
  verification: string | null;
}

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

/**
 * The reason a FALLBACK gives, from its `Conclusion: INCOMPLETE; <reason>` line (what
 * `renderFallback` wrote); a Conclusion without that prefix is returned whole, a missing one as ''.
 * prun's batch reads a unit's refusal reason with it.
 */
export function fallbackReason(summary: Pick<ResultSummary, 'conclusion'>): string {
  const conclusion = summary.conclusion ?? '';
  if (conclusion.startsWith(FALLBACK_CONCLUSION_PREFIX)) return conclusion.slice(FALLBACK_CONCLUSION_PREFIX.length);
  // An empty reason: the line's trailing space was trimmed by the reader.
  return conclusion === FALLBACK_CONCLUSION_PREFIX.trimEnd() ? '' : conclusion;
}
