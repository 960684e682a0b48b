/** Milliseconds since the epoch of 10000-01-01T00:00:00Z: past it, ISO 8601 needs a longer year. */
const YEAR_10000_MS = 253_402_300_800_000;

let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * `date.toISOString()`, for a column of timestamps written by the thousand. V8 formats an ISO
 * date in C++ on every call, which adds up; the records of a batch mostly share their second,
 * so its `YYYY-MM-DDTHH:MM:SS` is kept and only the milliseconds are added. Dates outside years
 * 0-9999, and invalid ones (RangeError), are left to toISOString.
 */
export function timestampText(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= 0 && ms < YEAR_10000_MS)) return date.toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19);
    cachedSecond = second;
  }
  const fraction = ms - second * 1000;
  return `${cachedPrefix}.${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
}
