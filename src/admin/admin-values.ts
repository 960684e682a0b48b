import { NO_LIMITS, parseRateLimits, RateLimits } from '../config/rate-limits';
import { BudgetTerms, changedTerms, NO_TERMS } from '../config/budgets';
import { GatewayError } from '../common/gateway-error';
import { decimalToNano } from '../config/money';
import { isZonedDate } from '../config/config.loader';

const MAX_BIGINT = 2n ** 63n - 1n;

/** An amount of the API (number or decimal string; null: unlimited) in nano-units. */
export function amountOf(value: number | string | null | undefined, field: string): bigint | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' && typeof value !== 'string') throw new GatewayError('invalid_request', `${field}: must be a number`);
  let nano: bigint;
  try {
    nano = decimalToNano(value, field);
  } catch (error) {
    throw new GatewayError('invalid_request', (error as Error).message);
  }
  // The columns are PostgreSQL bigint: a larger amount would fail in the database (500).
  if (nano > MAX_BIGINT) throw new GatewayError('invalid_request', `${field}: ${value} is too large`);
  return nano;
}

/** An expiry of the API: an ISO 8601 date or zoned date-time; null: never. */
export function expiryOf(value: string | null | undefined, field: string): Date | null {
  if (value === null || value === undefined) return null;
  if (!isZonedDate(value)) {
    throw new GatewayError('invalid_request', `${field}: must be an ISO 8601 date or date-time with a zone, e.g. 2027-01-01T00:00:00Z`);
  }
  return new Date(value);
}

/** A new key's model scope: `["*"]` when `*` is among the ids, else the ids once each. */
export function keyScope(models: string[]): string[] {
  return models.includes('*') ? ['*'] : [...new Set(models)];
}

/** The ids of a new key's scope that `isKnown` (the catalog) does not know; `*` is always known. */
export function unknownModels(models: string[], isKnown: (model: string) => boolean): string[] {
  return models.filter((model) => model !== '*' && !isKnown(model));
}

/**
 * Rate limits from a request body: on top of `base` (a change gives only what it changes, null
 * clears one limit, and `limits: null` clears all); 400 naming the field of a bad value.
 */
export function limitsOf(value: unknown, base: RateLimits | null = null): RateLimits | null {
  if (value === undefined) return base;
  if (value === null) return null;
  const problems: string[] = [];
  const merged = value && typeof value === 'object' && !Array.isArray(value) ? { ...(base ?? NO_LIMITS), ...(value as object) } : value;
  const limits = parseRateLimits(merged, 'limits', problems);
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '));
  return limits;
}

/** Budget period, time zone and alerts from a request body, on top of `base` as limits are; 400 naming the field of a bad value. */
export function termsOf(body: { budget_period?: unknown; budget_timezone?: unknown; alerts?: unknown }, base: BudgetTerms = NO_TERMS): BudgetTerms {
  const problems: string[] = [];
  const terms = changedTerms(body, base, problems);
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '));
  return terms;
}

/** Whether a body changes any of the budget terms. */
export function changesTerms(body: { budget_period?: unknown; budget_timezone?: unknown; alerts?: unknown }): boolean {
  return body.budget_period !== undefined || body.budget_timezone !== undefined || body.alerts !== undefined;
}
