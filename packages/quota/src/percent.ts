/**
 * Rounds to an integer the way Python's `format(x, '.0f')` does: exactly on the binary value,
 * ties to even. `Math.round` and `toFixed` round 12.5 up; Python prints `12`.
 */
export function roundHalfEven(value: number): number {
  if (!Number.isFinite(value)) return value;
  const floor = Math.floor(value);
  // Both operands are doubles of similar magnitude, so this subtraction is exact.
  const fraction = value - floor;
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Python's `format(x, '.0f')`, including `-0` for small negatives. */
export function formatFixed0(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  const rounded = roundHalfEven(value);
  if (rounded === 0 && (value < 0 || Object.is(value, -0))) return '-0';
  return BigInt(rounded).toString();
}

/**
 * Python's `'{:.0%}'.format(x)`: the value times 100 (a binary multiplication, as in CPython),
 * rounded half-to-even, then `%`. 0.2 → `20%`, 0.125 → `12%`, 1.0 → `100%`.
 */
export function formatPercent(fraction: number): string {
  return `${formatFixed0(fraction * 100)}%`;
}
