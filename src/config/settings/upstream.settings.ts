/** Settings of upstream lines (environment, docs/configuration.md). */

export interface LineSettings {
  /** How long a line that refused a connection or timed out is skipped. */
  cooldownMs: number;
  /** The longest a line that answered 429 with `Retry-After` is put last among its model's lines; 0: never. */
  rateLimitCooldownMaxMs: number;
  /** Sockets per line without `max_concurrency` (`LINE_CONNECTIONS`); 0: as many as its calls in flight need. */
  connections: number;
  /** Retries of a model that sets no `retry` of its own, and the fields one leaves out (RETRY_*). */
  retry: { attempts: number; backoffMs: number; maxBackoffMs: number };
}
export const LINE_SETTINGS = Symbol('LINE_SETTINGS');
