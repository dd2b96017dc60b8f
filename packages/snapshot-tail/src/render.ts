import type { SnapshotOutcome } from './snapshot.js';

/** `1500` -> `1,500` (Python's `{:,}`). */
export function groupThousands(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The human summary on stdout. It is not a contract; `--json` is. */
export function renderText(outcome: SnapshotOutcome): string {
  const { manifest } = outcome;
  return [
    `published ${outcome.published}`,
    `  ${groupThousands(manifest.bytes_copied)} of ${groupThousands(manifest.source_size_at_open)} bytes  ${manifest.capture_outcome}`,
    `  sha256 ${manifest.sha256}`,
    '  This is a bounded best-effort copy of a possibly live file.',
    '  It is not a result and does not mean the unit is finished.',
    '',
  ].join('\n');
}

/** `{"published", "manifest", "warning"}`, 2-space indent, trailing newline. */
export function renderJson(outcome: SnapshotOutcome): string {
  return `${JSON.stringify({ published: outcome.published, manifest: outcome.manifest, warning: outcome.warning }, null, 2)}\n`;
}
