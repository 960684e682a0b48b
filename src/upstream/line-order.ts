import type { RetryPolicy } from '../config/gateway-config';

/**
 * `lines` with one drawn first by weight among those `canTake` says can take the call now, the
 * others after it in their listed order (failover keeps the operator's order). `random` is in
 * [0, 1). Unchanged when no line that can take the call has a weight above 0.
 */
export function drawnFirst<T>(lines: readonly T[], weights: readonly number[], canTake: (line: T) => boolean, random: number): readonly T[] {
  let total = 0;
  for (let index = 0; index < lines.length; index++) if (canTake(lines[index])) total += weights[index];
  if (total === 0) return lines;
  let point = random * total;
  for (let index = 0; index < lines.length; index++) {
    if (!canTake(lines[index])) continue;
    point -= weights[index];
    if (point < 0) return index === 0 ? lines : [lines[index], ...lines.slice(0, index), ...lines.slice(index + 1)];
  }
  return lines;
}

/** A model's retry policy with the gateway's defaults (RETRY_* settings) for the fields it leaves out. */
export type Retries = Required<RetryPolicy>;

/**
 * How long to wait before retry number `retry` (0 for the first): full jitter, a uniform draw
 * below `backoffMs × 2^retry` capped at `maxBackoffMs`, and at least what the upstream asked for
 * (`retryAfterMs`). Undefined when the upstream asked for longer than `maxBackoffMs`: the client
 * gets that answer now rather than a wait the vendor would refuse again.
 */
export function retryDelayMs(policy: Retries, retry: number, retryAfterMs: number, random: number): number | undefined {
  if (retryAfterMs > policy.maxBackoffMs) return undefined;
  const ceiling = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** retry);
  return Math.max(retryAfterMs, Math.floor(random * ceiling));
}

/** The line of each attempt when a call made more than one (failover, retries); null for one or none. */
export function linesTriedOf(attempts: readonly { line: string }[] | undefined): string[] | null {
  return attempts !== undefined && attempts.length > 1 ? attempts.map((attempt) => attempt.line) : null;
}
