// The zod schemas, on their own subpath so that importing the package's main entry does not load
// zod (about 40 ms of a bin's start-up).
import { z } from 'zod';
import type { ResultSummary } from './result.js';

const ContractLine = z.string();

/** The parsed head of a result in the return contract. */
export const ResultSummarySchema: z.ZodType<ResultSummary> = z.object({
  unitId: z.string(),
  fallback: z.boolean(),
  conclusion: ContractLine.nullable(),
  files: ContractLine.nullable(),
  openItems: ContractLine.nullable(),
  verification: ContractLine.nullable(),
});
