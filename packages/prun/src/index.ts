export { PlanSchema, PlanError, parsePlan, loadPlan, checkGraph, type Plan, type PlanUnit, type ResolvedUnit } from './plan.js';
export { LedgerEntrySchema, UNIT_STATUSES, appendLedger, readLedger, type LedgerEntry, type UnitStatus } from './ledger.js';
export { decide, batchExitCode, quotaRetryTime, type ScheduleView, type ScheduleDecision } from './schedule.js';
export { BatchRun, BatchError, batchPaths, createBatch, defaultBatchDir, type BatchOutcome, type BatchSettings, type UnitReport } from './batch.js';
export { batchStatus, type UnitStatusRow } from './status.js';
export { throwawayClone, CloneError } from './clone.js';
export { completionScript, SHELLS, type Shell } from './completion.js';
export { TOOL_COMMANDS } from './commands.js';
