import { StringDecoder } from 'node:string_decoder';
import { readHead } from '@prun/kit/fs';
import { oneName, parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { findJob } from '../jobs.js';
import { jobFile } from '../paths.js';
import { tailLines } from '../render.js';
import { jobState } from '../state.js';
import { readText } from '../text.js';
import { sleep } from '../timing.js';
import type { Context } from './context.js';

/** The most a follower reads in one go: a huge progress.log is read in slices, never at once. */
const SLICE_BYTES = 1 << 20;

interface Appended {
  text: string;
  /** More was appended than this slice holds. */
  more: boolean;
}

/**
 * Reads what was appended to a file since the last call, at most SLICE_BYTES at a time, through
 * kit's bounded non-blocking reader: a FIFO put in place of progress.log is refused, never
 * waited on. A character split between two slices is decoded whole.
 */
function appendedReader(path: string): () => Appended {
  let offset = 0;
  const decoder = new StringDecoder('utf8');
  return () => {
    const read = readHead(path, { maxBytes: SLICE_BYTES, offset });
    if (!read.ok) return { text: '', more: false };
    offset += read.bytes.length;
    return { text: decoder.write(read.bytes), more: read.truncated };
  };
}

/** The last `count` complete lines of `text`, followed by its unfinished last line. */
function keepTail(text: string, count: number): string {
  const cut = text.lastIndexOf('\n') + 1;
  return tailLines(text.slice(0, cut), count).map((l) => l + '\n').join('') + text.slice(cut);
}

export async function cmdPeek(argv: string[], ctx: Context): Promise<number> {
  const args = parseArgs(argv, 'peek');
  const count = args.values.get('-n') ?? '20';
  if (!/^\d+$/.test(count)) throw usageError(`-n needs a whole number of lines, got: ${count}`);
  const jobDir = findJob(oneName(args, 'peek'), ctx.env);
  const path = jobFile(jobDir, 'progress.log');
  const follow = args.flags.has('-f') || args.flags.has('--follow');
  if (!follow) {
    ctx.out(tailLines(readText(path) ?? '', Number(count)).map((l) => l + '\n').join(''));
    return EXIT_OK;
  }
  // Follow: print the tail, then every complete line appended until the job stops running.
  const readNew = appendedReader(path);
  let first = '';
  for (;;) {
    const slice = readNew();
    first += slice.text;
    if (!slice.more) break;
    first = keepTail(first, Number(count));
  }
  const cut = first.lastIndexOf('\n') + 1;
  let partial = first.slice(cut);
  ctx.out(tailLines(first.slice(0, cut), Number(count)).map((l) => l + '\n').join(''));
  for (;;) {
    const running = jobState(jobDir) === 'running';
    const slice = readNew();
    const text = partial + slice.text;
    // The unfinished last line waits for its end, unless the job has stopped and all is read.
    const settled = !running && !slice.more;
    const end = settled ? text.length : text.lastIndexOf('\n') + 1;
    if (end > 0) ctx.out(text.slice(0, end) + (!settled || text.endsWith('\n') ? '' : '\n'));
    partial = text.slice(end);
    if (settled) return EXIT_OK;
    if (!slice.more) await sleep(100);
  }
}
