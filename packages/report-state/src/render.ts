import { printable } from '@prun/kit/cli';
import { toAsciiJson } from '@prun/kit/py';
import { codePointLength, codePointSlice } from './names.js';
import {
  SAFETY_LINES,
  SAFETY_SENTENCE,
  SCHEMA_VERSION,
  SummaryCounter,
  type DiscoveryError,
  type Report,
  type Summary,
  type UnitRecord,
} from './report.js';

/** The JSON document (the contract) as data: its keys in schema order. */
export function jsonDocument(report: Report): Record<string, unknown> {
  const document: Record<string, unknown> = {
    schema_version: SCHEMA_VERSION,
    roots: report.roots,
    unit_count: report.records.length,
    discovery_errors: report.discoveryErrors,
    units: report.shown,
    safety: SAFETY_SENTENCE,
  };
  if (report.summary !== undefined) document.summary = report.summary;
  return document;
}

/**
 * The JSON document rendered: ASCII only, one trailing newline. Laid out by ReportWriter (below),
 * the one layout of the document, which the bin also feeds as it sweeps.
 */
export function renderJson(report: Report): string {
  return writeReport(report, true, '')[0]!.text;
}

const UNIT_WIDTH = 52;
const RESULT_WIDTH = 9;
const PATH_WIDTH = 13;
const BYTES_WIDTH = 11;

function padEnd(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - codePointLength(text)));
}

function padStart(text: string, width: number): string {
  return ' '.repeat(Math.max(0, width - codePointLength(text))) + text;
}

// Printable ASCII only: one UTF-16 unit per code point and nothing for printable() to escape, so
// a name can be measured and cut by .length and .slice (the usual name; 10,000 of them per run).
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

/** An integer with `,` thousands separators (Python's `{:,}`). */
export function groupThousands(n: number): string {
  if (n >= 0 && n < 1000) return String(n);
  const digits = String(Math.abs(n));
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return n < 0 ? `-${grouped}` : grouped;
}

/** Bytes as MiB with one decimal, rounding an exact tie to even like Python's `{:.1f}`. */
export function formatMiB(bytes: number): string {
  const scaled = BigInt(Math.round(bytes)) * 10n;
  const unit = 1n << 20n;
  let tenths = scaled / unit;
  const twiceRemainder = (scaled % unit) * 2n;
  if (twiceRemainder > unit || (twiceRemainder === unit && tenths % 2n === 1n)) tenths += 1n;
  return `${tenths / 10n}.${tenths % 10n}`;
}

/** Counts as `key=value` pairs in first-seen order. */
export function formatCounts(counts: Record<string, number>): string {
  const pairs = Object.entries(counts).map(([key, value]) => `${key}=${value}`);
  return pairs.length === 0 ? '(none)' : pairs.join(' ');
}

function header(includeLegacyPid: boolean): string {
  const line =
    `${padEnd('unit', UNIT_WIDTH)} ${padEnd('result', RESULT_WIDTH)} ${padEnd('path', PATH_WIDTH)} ` +
    padStart('tail bytes', BYTES_WIDTH);
  return includeLegacyPid ? `${line}  legacy_pid_unverified` : line;
}

/** The column text of a unit: its base name escaped, cut to the column and padded to it. */
function nameColumn(unit: string): string {
  // The part after the last `/` (a unit path never ends in one), as basename() gives it.
  const name = unit.slice(unit.lastIndexOf('/') + 1);
  if (PLAIN_ASCII.test(name)) return name.length >= UNIT_WIDTH ? name.slice(0, UNIT_WIDTH) : name + ' '.repeat(UNIT_WIDTH - name.length);
  // Escaped before it is cut to the column: a newline or escape sequence in a directory name
  // must not start a table line of its own or move the cursor (--json keeps the real name).
  return padEnd(codePointSlice(printable(name), UNIT_WIDTH), UNIT_WIDTH);
}

// The result and path-state columns hold one of a few ASCII words: padded once, not per unit.
const RESULT_COLUMN: Readonly<Record<string, string>> = Object.fromEntries(
  ['present', 'empty', 'missing', 'unknown'].map((word) => [word, padEnd(word, RESULT_WIDTH)]),
);
const PATH_COLUMN: Readonly<Record<string, string>> = Object.fromEntries(
  ['resolved', 'absent-entry', 'invalid-entry', 'unreadable'].map((word) => [word, padEnd(word, PATH_WIDTH)]),
);

/** One unit's table line and its error lines, each ending in a newline. */
function recordText(record: UnitRecord, includeLegacyPid: boolean): string {
  // ASCII (digits and commas, or `?`): its length is its width.
  const bytes = record.tail_bytes === null ? '?' : groupThousands(record.tail_bytes);
  let text =
    `${nameColumn(record.unit)} ${RESULT_COLUMN[record.result] ?? padEnd(record.result, RESULT_WIDTH)} ` +
    `${PATH_COLUMN[record.result_path_state] ?? padEnd(record.result_path_state, PATH_WIDTH)} ${bytes.length >= BYTES_WIDTH ? bytes : ' '.repeat(BYTES_WIDTH - bytes.length) + bytes}`;
  if (includeLegacyPid) text += `  ${record.legacy_pid_unverified || '-'}`;
  text += '\n';
  for (const e of record.errors) text += `    error [${e.stage}]: ${printable(e.error)}\n`;
  return text;
}

function summaryLines(summary: Summary): string[] {
  return [
    '',
    `units ${summary.units}   missing-or-empty result ${summary.missing_or_empty_result_units} units, ` +
      `${formatMiB(summary.missing_or_empty_result_bytes)} MiB`,
    `  unresolved    : ${summary.unresolved_units} units, ${formatMiB(summary.unresolved_bytes)} MiB ` +
      '(tail present, result never classified)',
    `  by result     : ${formatCounts(summary.by_result)}`,
    `  by path state : ${formatCounts(summary.by_path_state)}`,
  ];
}

export interface OutputChunk {
  stream: 'stdout' | 'stderr';
  text: string;
}

/**
 * The human table, as ordered chunks for stdout and stderr: table, discovery failures
 * (stderr), summary, safety sentence, and the incomplete notice (stderr) when partial.
 */
export function renderText(report: Report, binName: string): OutputChunk[] {
  return writeReport(report, false, binName);
}

/** A whole report through ReportWriter, its stdout gathered as strings. */
function writeReport(report: Report, json: boolean, binName: string): OutputChunk[] {
  const head: ReportHead = {
    roots: report.roots,
    discoveryErrors: report.discoveryErrors,
    unitCount: report.records.length,
    includeLegacyPid: report.includeLegacyPid,
    withSummary: report.summary !== undefined,
  };
  const writer = new ReportWriter(head, json, binName, new TextGather());
  for (const record of report.records) writer.count(record);
  for (const record of report.shown) writer.show(record);
  // TextGather gives strings; the pieces are text.
  return writer.end().map(({ stream, data }) => ({ stream, text: data as string }));
}

function discoveryFailureText(errors: readonly DiscoveryError[], binName: string): string {
  return lines(errors.map((e) => `${binName}: discovery failed: ${printable(e.stage === 'root' ? e.root : e.unit)} (${printable(e.error)})`));
}

/** What follows the table on stdout: the summary when asked for, then the safety lines. */
function closingText(summary: Summary | undefined): string {
  return lines([...(summary === undefined ? [] : summaryLines(summary)), '', ...SAFETY_LINES]);
}

function incompleteText(binName: string): string {
  return `\n${binName}: This sweep is incomplete; see the errors column and any discovery failures above.\n`;
}

function lines(list: readonly string[]): string {
  return list.map((line) => `${line}\n`).join('');
}

// --- the one layout of both outputs, fed a record at a time ---------------------------------------
//
// ReportWriter lays out the document (or the table) as records come: renderJson and renderText
// feed it a whole Report, and the bin feeds it each record as the sweep makes it, so a record dies
// young instead of surviving scavenge after scavenge until the end (10,000 kept records cost tens
// of milliseconds of garbage collection). It keeps only counters (the summary, whether the sweep
// is partial) and, for JSON, the few hundred shown records not yet laid out; the stdout text goes
// to a gather (strings for the library, one growing buffer for the bin) and comes back from end()
// with the rest of the output, in order. Every part of the document is laid out by JSON.stringify
// (json.dumps indent=2 for plain data) and only spliced here.

/** What is known of a report before its first record: discovery's findings and the options. */
export interface ReportHead {
  roots: string[];
  discoveryErrors: DiscoveryError[];
  /** How many records the sweep makes (every discovered unit gives one). */
  unitCount: number;
  includeLegacyPid: boolean;
  withSummary: boolean;
}

/** Where a writer puts the stdout text it lays out, until end() takes it. */
export interface OutputGather {
  add(text: string): void;
  take(): string | Uint8Array;
}

/** Gathers the text as strings (the library's renderers return strings). */
export class TextGather implements OutputGather {
  private parts: string[] = [];

  add(text: string): void {
    this.parts.push(text);
  }

  take(): string {
    const text = this.parts.join('');
    this.parts = [];
    return text;
  }
}

/**
 * Gathers the text as UTF-8 in one buffer that doubles when full, for one write at the end: no
 * string of pending output for a scavenge to copy, and no partial output before the last record.
 * A buffer once taken is never written again, so a write that completes later keeps its bytes.
 */
export class BufferGather implements OutputGather {
  private buffer: Buffer;
  private used = 0;

  constructor(expectedBytes = 0) {
    this.buffer = Buffer.allocUnsafe(Math.max(1 << 16, expectedBytes));
  }

  add(text: string): void {
    // At most 3 UTF-8 bytes per UTF-16 unit: room enough that Buffer.write never cuts the text.
    const most = text.length * 3;
    if (this.used + most > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.used + most));
      this.buffer.copy(grown, 0, 0, this.used);
      this.buffer = grown;
    }
    this.used += this.buffer.write(text, this.used, 'utf8');
  }

  take(): Uint8Array {
    const taken = this.buffer.subarray(0, this.used);
    this.buffer = Buffer.allocUnsafe(1 << 16);
    this.used = 0;
    return taken;
  }
}

/** One piece of output, in the order it is written. */
export interface OutputPiece {
  stream: 'stdout' | 'stderr';
  data: string | Uint8Array;
}

/** An indented JSON value nested one level in the document: Python's indent=2 layout. */
function nestedJson(value: unknown): string {
  // JSON.stringify escapes every newline inside a string, so each raw newline is layout.
  return JSON.stringify(value, null, 2).replace(/\n/g, '\n  ');
}

/**
 * How many shown records the JSON writer lays out at once (kept no longer than that): their text,
 * about 37 KB, stays in the young generation, where 512 records a call made a large object each
 * (about a thousand more page faults over 10,000 units).
 */
const RECORDS_PER_LAYOUT = 128;

/**
 * Records as the document's `units` array holds them, each 4 spaces in, separated by `,\n`: laid
 * out by JSON.stringify itself (json.dumps indent=2) as the elements of an array nested two deep,
 * which is where the document holds them, and cut out of its brackets. One call lays out many
 * records: a call per record costs more than the whole document in one.
 */
function recordsJson(records: readonly UnitRecord[]): string {
  // `[\n  [\n` before the first record and `\n  ]\n]` after the last.
  return JSON.stringify([records], null, 2).slice(6, -6);
}

export class ReportWriter {
  private shownCount = 0;
  /** Shown records not yet laid out (JSON only). */
  private pending: UnitRecord[] = [];
  private laidOut = 0;
  private partial: boolean;
  private readonly counter: SummaryCounter | null;

  constructor(
    private readonly head: ReportHead,
    private readonly json: boolean,
    private readonly binName: string,
    private readonly gather: OutputGather,
  ) {
    this.partial = head.discoveryErrors.length > 0;
    this.counter = head.withSummary ? new SummaryCounter() : null;
    if (json) {
      this.put(
        `{\n  "schema_version": ${SCHEMA_VERSION},\n  "roots": ${nestedJson(head.roots)},\n  "unit_count": ${head.unitCount},\n` +
          `  "discovery_errors": ${nestedJson(head.discoveryErrors)},\n  "units": [`,
      );
    } else {
      const line = header(head.includeLegacyPid);
      this.put(lines([line, '-'.repeat(line.length)]));
    }
  }

  /** Counts a record toward the summary and the exit code (every record, shown or not). */
  count(record: UnitRecord): void {
    if (record.errors.length > 0) this.partial = true;
    this.counter?.add(record);
  }

  /** Lays out a shown record (JSON: with the next few hundred, in one call). */
  show(record: UnitRecord): void {
    this.shownCount += 1;
    if (!this.json) {
      this.put(recordText(record, this.head.includeLegacyPid));
      return;
    }
    this.pending.push(record);
    if (this.pending.length === RECORDS_PER_LAYOUT) this.layOutPending();
  }

  private layOutPending(): void {
    if (this.pending.length === 0) return;
    this.put((this.laidOut === 0 ? '\n' : ',\n') + recordsJson(this.pending));
    this.laidOut += this.pending.length;
    this.pending = [];
  }

  /** Whether anything was not fully observed (exit 1), counting every record so far. */
  get isPartial(): boolean {
    return this.partial;
  }

  /**
   * The whole output in order: for JSON the document; for text the table, the discovery failures
   * (stderr), the summary and safety lines, and the incomplete notice (stderr) when partial.
   */
  end(): OutputPiece[] {
    const summary = this.counter?.summary();
    if (this.json) {
      this.layOutPending();
      let rest = `${this.shownCount === 0 ? ']' : '\n  ]'},\n  "safety": ${JSON.stringify(SAFETY_SENTENCE)}`;
      if (summary !== undefined) rest += `,\n  "summary": ${nestedJson(summary)}`;
      this.put(`${rest}\n}\n`);
      return [{ stream: 'stdout', data: this.gather.take() }];
    }
    const pieces: OutputPiece[] = [{ stream: 'stdout', data: this.gather.take() }];
    if (this.head.discoveryErrors.length > 0) pieces.push({ stream: 'stderr', data: discoveryFailureText(this.head.discoveryErrors, this.binName) });
    pieces.push({ stream: 'stdout', data: closingText(summary) });
    if (this.partial) pieces.push({ stream: 'stderr', data: incompleteText(this.binName) });
    return pieces;
  }

  /** Adds stdout text (ensure_ascii applied for --json). */
  private put(text: string): void {
    this.gather.add(this.json ? toAsciiJson(text) : text);
  }
}
