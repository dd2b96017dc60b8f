import { CliError, EXIT_TEMPFAIL } from '@prun/kit/cli';

/** prun's own exit codes (docs/exit-codes.md); 1-100 is a finished batch's count of failed and invalid units. */
export const EXIT = {
  ok: 0,
  /** `clone`: git failed; `clean`: something could not be archived or removed and was kept. */
  failed: 1,
  usage: 2,
  internal: 70,
  /**
   * The batch stopped on a quota refusal under --no-quota-wait: the code the quota gate refuses
   * with (quota's QUOTA_EXHAUSTED_EXIT, kit's temporary refusal). Taken from kit, not quota, so
   * prun's command line (spec.ts) loads no quota code; test/cli.test.ts holds the two equal.
   */
  quota: EXIT_TEMPFAIL,
  /** Another prun process drives this batch directory. */
  busy: 101,
  /** The ledger is damaged (a bad line before the last, or missing or empty beside a batch's state). */
  ledger: 102,
  /** `--halt` stopped the batch once its failure threshold was reached. */
  halted: 103,
  /** `wait`: the batch is not finished and no prun drives it (its driver was killed). */
  abandoned: 104,
} as const;

/** A batch refusal or stop with its own exit code: kit's one error type, so every catch knows it. */
export class BatchError extends CliError {
  constructor(message: string, exitCode: number) {
    super(message, { exitCode });
    this.name = 'BatchError';
  }
}
