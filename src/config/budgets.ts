export type BudgetPeriod = 'day' | 'week' | 'month';

export const BUDGET_PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];
/** Most alert thresholds an owner may carry. */
export const MAX_ALERTS = 10;
/** Thresholds above 100 % can still fire (a budget overshoots by what calls in flight cost), up to this. */
export const MAX_ALERT_PERCENT = 1000;

/** How an owner's budget runs: for good, or again each calendar period in a time zone. */
export interface BudgetTerms {
  period: BudgetPeriod | null;
  /** IANA time zone name the periods are counted in; null: UTC. */
  timezone: string | null;
  /** Per cent of the budget at which an alert fires, ascending, each once per period. */
  alerts: number[];
}

/** `budget_period`: day, week (from Monday) or month; absent or null: none. Problems are named by `path`. */
export function parseBudgetPeriod(value: unknown, path: string, problems: string[]): BudgetPeriod | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && (BUDGET_PERIODS as readonly string[]).includes(value)) return value as BudgetPeriod;
  problems.push(`${path}: must be one of ${BUDGET_PERIODS.join(', ')}`);
  return null;
}

/** `budget_timezone`: an IANA time zone name (`Europe/Berlin`, `UTC`); absent or null: UTC. */
export function parseTimezone(value: unknown, path: string, problems: string[]): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && value.length <= 64 && isTimeZone(value)) return value;
  problems.push(`${path}: must be an IANA time zone name such as Europe/Berlin or UTC`);
  return null;
}

function isTimeZone(name: string): boolean {
  // Offsets like +02:00 pass Intl but shift with no daylight saving; names only.
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** `alerts`: per cent thresholds, integers 1..1000, at most 10; absent or null: none. Returned ascending, each once. */
export function parseAlerts(value: unknown, path: string, problems: string[]): number[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    problems.push(`${path}: must be a list of per cent thresholds, such as [50, 80, 100]`);
    return [];
  }
  if (value.length > MAX_ALERTS) problems.push(`${path}: at most ${MAX_ALERTS} thresholds`);
  const thresholds = new Set<number>();
  value.forEach((threshold, index) => {
    if (typeof threshold === 'number' && Number.isInteger(threshold) && threshold >= 1 && threshold <= MAX_ALERT_PERCENT) thresholds.add(threshold);
    else problems.push(`${path}[${index}]: must be a whole per cent from 1 to ${MAX_ALERT_PERCENT}`);
  });
  return [...thresholds].sort((a, b) => a - b);
}

/** The terms of an owner item (file or admin API), problems named under `path`. */
export function parseBudgetTerms(
  item: { budget_period?: unknown; budget_timezone?: unknown; alerts?: unknown },
  path: string,
  problems: string[],
): BudgetTerms {
  const at = (field: string) => (path === '' ? field : `${path}.${field}`);
  const period = parseBudgetPeriod(item.budget_period, at('budget_period'), problems);
  const timezone = parseTimezone(item.budget_timezone, at('budget_timezone'), problems);
  if (timezone !== null && period === null) problems.push(`${at('budget_timezone')}: needs a budget_period`);
  return { period, timezone, alerts: parseAlerts(item.alerts, at('alerts'), problems) };
}

/** The terms a change leaves: fields given replace the stored ones (null clears one), absent ones stay. */
export function changedTerms(
  change: { budget_period?: unknown; budget_timezone?: unknown; alerts?: unknown },
  base: BudgetTerms,
  problems: string[],
): BudgetTerms {
  const merged = {
    budget_period: change.budget_period === undefined ? base.period : change.budget_period,
    budget_timezone: change.budget_timezone === undefined ? base.timezone : change.budget_timezone,
    alerts: change.alerts === undefined ? base.alerts : change.alerts,
  };
  return parseBudgetTerms(merged, '', problems);
}

export const NO_TERMS: BudgetTerms = { period: null, timezone: null, alerts: [] };

/** The stored `alerts` column (jsonb, null for none). */
export function storedAlerts(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((threshold): threshold is number => typeof threshold === 'number') : [];
}

/** The `alerts` column: null for none. */
export function alertsColumn(alerts: readonly number[]): string | null {
  return alerts.length === 0 ? null : JSON.stringify(alerts);
}
