/** A fixed instant, or a function read each time a step needs "now" (tests inject one). */
export type Clock = Date | number | (() => Date | number);

export function toEpochMs(now: Date | number | undefined): number {
  if (now === undefined) return Date.now();
  return typeof now === 'number' ? now : now.getTime();
}

export function clockMs(clock: Clock | undefined): number {
  return toEpochMs(typeof clock === 'function' ? clock() : clock);
}
