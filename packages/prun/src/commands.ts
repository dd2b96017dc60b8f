import type { BinSpec } from '@prun/kit/spec';

/**
 * The bins `prun` fronts. Each runs in this process through its package's `./cli` entry, so
 * arguments, output and exit codes are the bin's own, byte for byte, and a foreground
 * `prun job run` still dies with its caller. Their options, help and exit codes are declared in
 * their own packages (`./spec`), never here.
 */
export interface ToolCommand {
  name: string;
  bin: string;
  load: () => Promise<{ main: (argv: string[]) => Promise<void> }>;
  spec: () => Promise<{ BINS: readonly BinSpec[] }>;
}

export const TOOL_COMMANDS: ToolCommand[] = [
  { name: 'dispatch', bin: 'prun-dispatch-agy', load: () => import('@prun/dispatcher-agy/cli'), spec: () => import('@prun/dispatcher-agy/spec') },
  { name: 'monitor', bin: 'prun-monitor', load: () => import('@prun/monitor/monitor-cli'), spec: () => import('@prun/monitor/spec') },
  { name: 'gather', bin: 'prun-gather', load: () => import('@prun/monitor/gather-cli'), spec: () => import('@prun/monitor/spec') },
  { name: 'report-state', bin: 'prun-report-state', load: () => import('@prun/report-state/cli'), spec: () => import('@prun/report-state/spec') },
  { name: 'snapshot-tail', bin: 'prun-snapshot-tail', load: () => import('@prun/snapshot-tail/cli'), spec: () => import('@prun/snapshot-tail/spec') },
  { name: 'quota', bin: 'prun-quota', load: () => import('@prun/quota/cli'), spec: () => import('@prun/quota/spec') },
  { name: 'models', bin: 'prun-model-resolve', load: () => import('@prun/model-resolve/cli'), spec: () => import('@prun/model-resolve/spec') },
  { name: 'env', bin: 'prun-env-scrub', load: () => import('@prun/env-scrub/cli'), spec: () => import('@prun/env-scrub/spec') },
  { name: 'job', bin: 'prun-job', load: () => import('@prun/job-runner/cli'), spec: () => import('@prun/job-runner/spec') },
];
