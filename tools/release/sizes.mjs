// Writes measured install sizes into README.md's package table (the `install size` column),
// matching each row by the package name in its first cell. `pnpm release:check --update-readme`
// measures them (each package installed alone from the local registry) and calls this.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './workspace.mjs';

const COLUMN = 'install size';

function cells(line) {
  return line.trim().replace(/^\|/u, '').replace(/\|$/u, '').split('|').map((cell) => cell.trim());
}
function row(values) {
  return `| ${values.join(' | ')} |`;
}

/** README text with the size column of the package table set from `sizes` (name -> text). */
export function withSizes(text, sizes) {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => /^\|\s*package\s*\|/u.test(line));
  if (header < 0) throw new Error('README.md has no package table (a row starting with "| package |")');
  const head = cells(lines[header]);
  let column = head.indexOf(COLUMN);
  const adding = column < 0;
  if (adding) {
    column = 2;
    head.splice(column, 0, COLUMN);
    lines[header] = row(head);
    const rule = cells(lines[header + 1]);
    rule.splice(column, 0, '--:');
    lines[header + 1] = row(rule);
  }
  for (let index = header + 2; index < lines.length && lines[index].startsWith('|'); index += 1) {
    const values = cells(lines[index]);
    const name = /`([^`]+)`/u.exec(values[0])?.[1];
    const size = sizes.get(name) ?? (adding ? '' : values[column]);
    if (adding) values.splice(column, 0, size);
    else values[column] = size;
    lines[index] = row(values);
  }
  return lines.join('\n');
}

/** `1.2 MB` / `340 kB` / `12 B` as bytes (the units formatBytes writes), NaN for anything else. */
export function parseSize(text) {
  const match = /^([\d.]+)\s*(B|kB|MB)$/u.exec(text.trim());
  return match ? Number(match[1]) * { B: 1, kB: 1024, MB: 1024 * 1024 }[match[2]] : Number.NaN;
}

/**
 * Rows of the README's size column more than `tolerance` (a fraction) off the measured bytes
 * (name -> bytes), or missing: `name: README says X, measured Y`. Install sizes move a little
 * with npm's bookkeeping files; a real drift (a new dependency, a bigger build) is more.
 */
export function sizeDrift(text, measured, format, tolerance = 0.1) {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => /^\|\s*package\s*\|/u.test(line));
  const column = header < 0 ? -1 : cells(lines[header]).indexOf(COLUMN);
  const shown = new Map();
  if (column >= 0) {
    for (let index = header + 2; index < lines.length && lines[index].startsWith('|'); index += 1) {
      const values = cells(lines[index]);
      const name = /`([^`]+)`/u.exec(values[0])?.[1];
      if (name) shown.set(name, values[column]);
    }
  }
  return [...measured].flatMap(([name, bytes]) => {
    const text = shown.get(name) ?? '(nothing)';
    const readme = parseSize(text);
    return Number.isNaN(readme) || Math.abs(readme - bytes) > tolerance * bytes ? [`${name}: README says ${text}, measured ${format(bytes)}`] : [];
  });
}

export function updateReadmeSizes(sizes, path = join(root, 'README.md')) {
  writeFileSync(path, withSizes(readFileSync(path, 'utf8'), sizes));
}
