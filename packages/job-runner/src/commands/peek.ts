import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { oneName, parseArgs } from '../args.js';
import { EXIT_OK, usageError } from '../errors.js';
import { findJob } from '../jobs.js';
import { jobFile } from '../paths.js';
import { tailLines } from '../render.js';
import { jobState } from '../state.js';
import { readText } from '../text.js';
import { sleep } from '../timing.js';
import type { Context } from './context.js';

/** Reads what was appended to a file since the last call. */
function appendedReader(path: string): () => string {
  let offset = 0;
  return () => {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return '';
    }
    try {
      const size = fstatSync(fd).size;
      if (size <= offset) return '';
      const buffer = Buffer.alloc(size - offset);
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      offset += n;
      return buffer.subarray(0, n).toString('utf8');
    } finally {
      closeSync(fd);
    }
  };
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
  const first = readNew();
  const cut = first.lastIndexOf('\n') + 1;
  let partial = first.slice(cut);
  ctx.out(tailLines(first.slice(0, cut), Number(count)).map((l) => l + '\n').join(''));
  for (;;) {
    const running = jobState(jobDir) === 'running';
    const text = partial + readNew();
    const end = running ? text.lastIndexOf('\n') + 1 : text.length;
    if (end > 0) ctx.out(text.slice(0, end) + (running || text.endsWith('\n') ? '' : '\n'));
    partial = text.slice(end);
    if (!running) return EXIT_OK;
    await sleep(100);
  }
}
