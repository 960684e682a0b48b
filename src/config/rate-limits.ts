/**
 * Rate limits of a key or an owner (config file `limits:`, admin API `limits`). A limit left
 * out (null) does not apply. Stored as the file writes them (snake_case JSON), so the database,
 * the admin API and the file share one shape.
 */
export interface RateLimits {
  /** Calls admitted in any sliding minute. */
  requests_per_minute: number | null;
  /** Input plus output tokens of the calls metered in any sliding minute; a call is admitted while under it. */
  tokens_per_minute: number | null;
  /** Calls under way at once. */
  concurrent_requests: number | null;
}

export const RATE_LIMIT_NAMES = ['requests_per_minute', 'tokens_per_minute', 'concurrent_requests'] as const;
export type RateLimitName = (typeof RATE_LIMIT_NAMES)[number];

export const NO_LIMITS: RateLimits = { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: null };

/** The largest limit value: counts stay exact integers in JavaScript and in a PostgreSQL bigint. */
export const MAX_LIMIT = 1_000_000_000_000;

/**
 * Checks a `limits` value (a mapping of the three names to positive integers or null) and gives
 * it whole, or null when no limit is set; each problem is named by its field under `path`.
 */
export function parseRateLimits(value: unknown, path: string, problems: string[]): RateLimits | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${path}: must be a mapping of ${RATE_LIMIT_NAMES.join(', ')}`);
    return null;
  }
  const limits: RateLimits = { ...NO_LIMITS };
  for (const [name, given] of Object.entries(value as Record<string, unknown>)) {
    if (!(RATE_LIMIT_NAMES as readonly string[]).includes(name)) {
      problems.push(`${path}.${name}: unknown limit (expected one of: ${RATE_LIMIT_NAMES.join(', ')})`);
      continue;
    }
    if (given === null) continue;
    if (typeof given !== 'number' || !Number.isInteger(given) || given < 1 || given > MAX_LIMIT) {
      problems.push(`${path}.${name}: must be a whole number from 1 to ${MAX_LIMIT}, or null`);
      continue;
    }
    limits[name as RateLimitName] = given;
  }
  return hasAnyLimit(limits) ? limits : null;
}

export function hasAnyLimit(limits: RateLimits | null | undefined): limits is RateLimits {
  return !!limits && (limits.requests_per_minute !== null || limits.tokens_per_minute !== null || limits.concurrent_requests !== null);
}

/** The stored form (jsonb) back into limits; anything unexpected counts as no limit. */
export function storedRateLimits(value: unknown): RateLimits | null {
  const problems: string[] = [];
  const limits = parseRateLimits(typeof value === 'string' ? (JSON.parse(value) as unknown) : value, 'limits', problems);
  return problems.length ? null : limits;
}

/** The `limits` column's value: the JSON text, or null for none. */
export function limitsColumn(limits: RateLimits | null | undefined): string | null {
  return hasAnyLimit(limits) ? JSON.stringify(limits) : null;
}
