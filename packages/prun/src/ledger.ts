// The ledger format (schema, reader, appender, tail repair) lives in @prun/unit-state/ledger, so
// report-state's --batch reads the same format without depending on prun. Here prun only gives a
// ledger it cannot read at all its own exit code (102).
import { LedgerError, readLedger as readLedgerFile, type LedgerRead } from '@prun/unit-state/ledger';
import { BatchError, EXIT } from './errors.js';

export {
  LEDGER_MAX_BYTES,
  LedgerEntrySchema,
  UNIT_STATUSES,
  appendLedger,
  recordedStateDirs,
  repairLedgerTail,
  resolveBatchDir,
  syncLedger,
  type AppendIo,
  type AppendOptions,
  type LedgerEntry,
  type LedgerRead,
  type RecordedStateDir,
  type UnitStatus,
} from '@prun/unit-state/ledger';

/** Read a ledger (see @prun/unit-state/ledger); one it cannot read at all stops prun with exit 102. */
export function readLedger(path: string): LedgerRead {
  try {
    return readLedgerFile(path);
  } catch (error) {
    if (error instanceof LedgerError) throw new BatchError(`${error.message}; nothing was changed`, EXIT.ledger);
    throw error;
  }
}
