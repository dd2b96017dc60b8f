/**
 * Parses an ISO-8601 timestamp the way the dispatcher's Python does (`datetime.fromisoformat`
 * after turning a trailing `Z`/`z` into `+00:00`; a value without a zone is UTC).
 * Returns epoch milliseconds, or null when the text is not such a timestamp.
 */
export function parseIsoInstant(raw: string): number | null {
  let text = raw.trim();
  if (text.endsWith('Z') || text.endsWith('z')) text = `${text.slice(0, -1)}+00:00`;
  const match = ISO_PATTERN.exec(text);
  if (match === null) return null;
  const groups = match.groups ?? {};
  const year = Number(groups['year']);
  const month = Number(groups['month'] ?? groups['basicMonth']);
  const day = Number(groups['day'] ?? groups['basicDay']);
  const hour = Number(groups['hour'] ?? 0);
  const minute = Number(groups['minute'] ?? 0);
  const second = Number(groups['second'] ?? 0);
  const fraction = groups['fraction'] ?? '';
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const millis = fraction === '' ? 0 : Number(`0.${fraction}`) * 1000;
  let offsetMinutes = 0;
  const sign = groups['sign'];
  if (sign !== undefined) {
    const offsetHours = Number(groups['offHour']);
    const offsetMins = Number(groups['offMinute'] ?? 0);
    const offsetSecs = Number(groups['offSecond'] ?? 0);
    if (offsetMins > 59 || offsetSecs > 59) return null;
    const total = offsetHours * 60 + offsetMins + offsetSecs / 60;
    if (total >= 24 * 60) return null;
    offsetMinutes = sign === '-' ? -total : total;
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, 0);
  return utc.getTime() + Math.floor(millis) - offsetMinutes * 60_000;
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

// Extended (`2026-09-11T15:34:00.5+02:00`) and basic (`20260911T153400`) forms, with `T`, `t`
// or a space between date and time, and time given to the hour, minute or second.
const ISO_PATTERN = new RegExp(
  '^(?<year>\\d{4})(?:-(?<month>\\d{2})-(?<day>\\d{2})|(?<basicMonth>\\d{2})(?<basicDay>\\d{2}))' +
    '(?:[Tt ](?<hour>\\d{2})(?::?(?<minute>\\d{2})(?::?(?<second>\\d{2})(?:[.,](?<fraction>\\d{1,9}))?)?)?' +
    '(?:(?<sign>[+-])(?<offHour>\\d{2})(?::?(?<offMinute>\\d{2})(?::?(?<offSecond>\\d{2})(?:\\.\\d{1,6})?)?)?)?)?$',
);
