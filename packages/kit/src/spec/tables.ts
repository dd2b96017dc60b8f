import type { ExitCodeSpec } from './types.js';

/** A Markdown exit-code table: `| code | meaning |`, one row per declared code, in order. */
export function exitCodeTable(codes: readonly ExitCodeSpec[]): string {
  const rows = codes.map((entry) => `| ${entry.code} | ${entry.meaning.replace(/\|/g, '\\|')} |`);
  return ['| code | meaning |', '|---|---|', ...rows].join('\n');
}

/** The comment pair that fences a generated block in a Markdown file. */
export function markers(name: string): { start: string; end: string } {
  return { start: `<!-- generated: ${name} (pnpm gen:docs) -->`, end: `<!-- end generated: ${name} -->` };
}

/**
 * Puts `body` between the markers named `name` in `text`. Returns null when the markers are
 * missing, so the generator can say which file lacks them instead of guessing where to write.
 */
export function replaceBetweenMarkers(text: string, name: string, body: string): string | null {
  const { start, end } = markers(name);
  const from = text.indexOf(start);
  const to = text.indexOf(end, from + start.length);
  if (from === -1 || to === -1) return null;
  return `${text.slice(0, from + start.length)}\n${body}\n${text.slice(to)}`;
}
