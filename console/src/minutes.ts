import type { MinuteTotalView } from './types';

/** Per-minute totals turned into what the calls-per-minute chart shows: every minute of the window, zeros included. */

export const MINUTE_MS = 60_000;

export interface MinuteRow {
  /** Start of the minute, milliseconds since the epoch (UTC). */
  at: number;
  calls: number;
  failedCalls: number;
  costNano: bigint;
}

/**
 * `count` minutes ending with the current one, as the gateway counts them (its window starts
 * `count - 1` minutes before the current minute). The gateway leaves minutes without calls out;
 * they are filled in here with zeros. A minute the gateway answers past the browser's clock (a
 * clock ahead of this one) moves the window's end, so no answered minute is dropped.
 */
export function fillMinutes(rows: MinuteTotalView[], count: number, now: number): MinuteRow[] {
  const byMinute = new Map<number, MinuteTotalView>();
  for (const row of rows) {
    const at = Date.parse(row.minute);
    if (!Number.isNaN(at)) byMinute.set(at, row);
  }
  let end = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  for (const at of byMinute.keys()) if (at > end) end = at;
  const minutes: MinuteRow[] = [];
  for (let index = count - 1; index >= 0; index--) {
    const at = end - index * MINUTE_MS;
    const row = byMinute.get(at);
    minutes.push({ at, calls: row?.calls ?? 0, failedCalls: row?.failed_calls ?? 0, costNano: row ? BigInt(row.cost_nano) : 0n });
  }
  return minutes;
}

/** `14:05`: the UTC time of a minute. */
export function minuteLabel(at: number): string {
  return new Date(at).toISOString().slice(11, 16);
}
