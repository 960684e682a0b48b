import type { DailyTotalView } from './types';

/** Daily totals turned into what the spend charts and figures show; sums are exact, in nano-units. */

export interface Series {
  name: string;
  /** Nano-units per day, in the order of the chart's days. */
  nano: bigint[];
}

export interface Totals {
  nano: bigint;
  calls: number;
  failedCalls: number;
}

export function totalsOf(rows: DailyTotalView[], include: (row: DailyTotalView) => boolean = () => true): Totals {
  const totals: Totals = { nano: 0n, calls: 0, failedCalls: 0 };
  for (const row of rows) {
    if (!include(row)) continue;
    totals.nano += BigInt(row.cost_nano);
    totals.calls += row.calls;
    totals.failedCalls += row.failed_calls;
  }
  return totals;
}

/**
 * One series per group (model or owner) over `days`, largest first. Past `limit` groups the
 * rest are summed as one "Other" series, so the chart keeps colours that can be told apart.
 */
export function seriesBy(rows: DailyTotalView[], days: string[], groupOf: (row: DailyTotalView) => string, limit = 8): Series[] {
  const dayIndex = new Map(days.map((day, index) => [day, index]));
  const byGroup = new Map<string, bigint[]>();
  for (const row of rows) {
    const index = dayIndex.get(row.day);
    if (index === undefined) continue;
    const group = groupOf(row);
    let values = byGroup.get(group);
    if (!values) byGroup.set(group, (values = days.map(() => 0n)));
    values[index] += BigInt(row.cost_nano);
  }
  const series = [...byGroup]
    .map(([name, nano]) => ({ name, nano, total: sum(nano) }))
    .sort((a, b) => (a.total === b.total ? a.name.localeCompare(b.name) : a.total > b.total ? -1 : 1));
  if (series.length <= limit) return series.map(({ name, nano }) => ({ name, nano }));
  const kept = series.slice(0, limit - 1);
  const rest = series.slice(limit - 1);
  const other = days.map((_, index) => rest.reduce((total, item) => total + item.nano[index], 0n));
  return [...kept.map(({ name, nano }) => ({ name, nano })), { name: `Other (${rest.length})`, nano: other }];
}

export function sum(values: bigint[]): bigint {
  return values.reduce((total, value) => total + value, 0n);
}

/** A nano-units amount as a number of currency units, for drawing. */
export function units(nano: bigint): number {
  return Number(nano) / 1e9;
}
