/** How the console writes amounts, counts, times and UTC days. */

import type { RateLimits } from './types';

const NANO = 1_000_000_000n;

function groupThousands(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * An exact amount from its nano-units string: every significant decimal, at least two.
 * `grouped: false` leaves out thousands separators, for a value the gateway reads back.
 */
export function amountFromNano(nano: string | bigint, grouped = true): string {
  let value = typeof nano === 'bigint' ? nano : BigInt(nano);
  const negative = value < 0n;
  if (negative) value = -value;
  const fraction = (value % NANO).toString().padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  const whole = (value / NANO).toString();
  return `${negative ? '-' : ''}${grouped ? groupThousands(whole) : whole}.${fraction}`;
}

const amountFormat = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 6 });
const countFormat = new Intl.NumberFormat('en-US');

/** A decimal amount (charts, sums of numbers); exact amounts use amountFromNano. */
export function amount(value: number): string {
  return amountFormat.format(value);
}

export function count(value: number): string {
  return countFormat.format(value);
}

export function percent(part: number, whole: number): string {
  if (whole <= 0) return part > 0 ? 'over 100%' : '0%';
  const ratio = (part / whole) * 100;
  return `${ratio > 0 && ratio < 1 ? ratio.toFixed(1) : Math.round(ratio)}%`;
}

/** An ISO time as `2026-11-23 14:05:12 UTC`: the daily totals are UTC days, so times are too. */
export function utcTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** An ISO time's UTC time of day, `14:05:12 UTC`, for times within the hour. */
export function utcClock(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(11, 19)} UTC`;
}

export function milliseconds(value: number | null): string {
  return value === null ? '—' : `${countFormat.format(value)} ms`;
}

/** `YYYY-MM-DD` of a time's UTC day. */
export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export function addDays(day: string, days: number): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return utcDay(date);
}

/** Every UTC day from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}

/** A datetime-local value (the browser's local time) as an ISO time with zone, or undefined when empty. */
export function isoFromLocal(value: string): string | undefined {
  if (value === '') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The limits set, each as `600 requests/min`, `200,000 tokens/min` or `20 at once`; none set: empty. */
export function rateLimitParts(limits: RateLimits | null): string[] {
  const per = (value: number, one: string, many: string) => `${countFormat.format(value)} ${value === 1 ? one : many}`;
  const parts: string[] = [];
  if (limits?.requests_per_minute != null) parts.push(per(limits.requests_per_minute, 'request/min', 'requests/min'));
  if (limits?.tokens_per_minute != null) parts.push(per(limits.tokens_per_minute, 'token/min', 'tokens/min'));
  if (limits?.concurrent_requests != null) parts.push(`${countFormat.format(limits.concurrent_requests)} at once`);
  return parts;
}

/** Rate limits in one line, `600 requests/min · 200,000 tokens/min · 20 at once`; `none` when no limit is set. */
export function rateLimitsText(limits: RateLimits | null, none = 'No rate limits'): string {
  const parts = rateLimitParts(limits);
  return parts.length === 0 ? none : parts.join(' · ');
}

export function modelsScope(models: string[]): string {
  return models.includes('*') ? 'All models' : models.join(', ');
}

/** An ISO time as a datetime-local value in the browser's local time (the inverse of isoFromLocal). */
export function localFromIso(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}
