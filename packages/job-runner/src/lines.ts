// Splitting pi's stdout into records: linear in the bytes read, with bounded memory per line.
// Each chunk is searched for LF once; a line's pieces are joined only when its LF arrives; a line
// that grows past the bound is dropped as it streams in and reported once its LF arrives.

/** The longest pi record the runner reads (bytes, without the LF). */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** How much of an over-long record is kept, to name its type in the report. */
const HEAD_BYTES = 256;

export interface SkippedLine {
  /** Bytes of the whole line, without its LF. */
  bytes: number;
  /** Its first bytes, decoded leniently, to tell what kind of record it was. */
  head: string;
}

export interface LineSink {
  line: (text: string) => void;
  skipped: (skipped: SkippedLine) => void;
}

export class LineSplitter {
  private pieces: Buffer[] = [];
  private length = 0;
  private head: Buffer | undefined;

  constructor(
    private readonly sink: LineSink,
    private readonly maxBytes: number = MAX_RECORD_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    // Records end at LF only; U+2028 and U+2029 are valid inside JSON strings.
    let nl = chunk.indexOf(0x0a, start);
    while (nl >= 0) {
      this.take(chunk.subarray(start, nl));
      this.emit();
      start = nl + 1;
      nl = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) this.take(chunk.subarray(start));
  }

  /** End of input: a last line without LF still counts. */
  end(): void {
    if (this.length > 0) this.emit();
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.length += piece.length;
    if (this.head !== undefined) return;
    if (this.length > this.maxBytes) {
      // Over the bound: keep only the head and let the rest of the line stream past.
      this.head = Buffer.concat([...this.pieces, piece]).subarray(0, HEAD_BYTES);
      this.pieces = [];
      return;
    }
    // A pipe stream hands out a fresh buffer per chunk, so keeping a view of it is safe.
    this.pieces.push(piece);
  }

  private emit(): void {
    const length = this.length;
    const head = this.head;
    const pieces = this.pieces;
    this.pieces = [];
    this.length = 0;
    this.head = undefined;
    if (head !== undefined) {
      this.sink.skipped({ bytes: length, head: head.toString('utf8') });
      return;
    }
    const text = pieces.length === 1 ? (pieces[0] as Buffer).toString('utf8') : Buffer.concat(pieces, length).toString('utf8');
    this.sink.line(text);
  }
}
