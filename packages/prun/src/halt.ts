// `--halt now,fail=N|soon,fail=N` (and `fail=P%`), with GNU parallel's meaning: once N units (or
// P% of all the batch's units) have failed, `now` stops every running unit and starts no more,
// `soon` starts no more and lets the running ones finish.

export interface HaltRule {
  when: 'now' | 'soon';
  /** A count of units, or a percentage of all the batch's units. */
  fail: { count: number } | { percent: number };
  /** As typed, for messages. */
  text: string;
}

/** Parses a `--halt` value; throws an Error whose message is the one line to show. */
export function parseHalt(text: string): HaltRule {
  const match = /^(now|soon),fail=(?:([1-9]\d{0,8})|(\d{1,3}(?:\.\d+)?)%)$/.exec(text.trim());
  const problem = `--halt must be now,fail=N or soon,fail=N (N a positive whole number of units, or P% of all units, 0 < P <= 100); got: ${text}`;
  if (match === null) throw new Error(problem);
  const when = match[1] as 'now' | 'soon';
  if (match[2] !== undefined) return { when, fail: { count: Number(match[2]) }, text: text.trim() };
  const percent = Number(match[3]);
  if (!(percent > 0 && percent <= 100)) throw new Error(problem);
  return { when, fail: { percent }, text: text.trim() };
}

/**
 * Whether `failed` failures out of `total` units reach the rule: N failures, or at least P% of
 * all units (10 units at 25% halt on the third failure).
 */
export function haltReached(rule: HaltRule, failed: number, total: number): boolean {
  if (failed <= 0) return false;
  if ('count' in rule.fail) return failed >= rule.fail.count;
  return failed * 100 >= rule.fail.percent * total;
}
