/** Settings of rate limits and of the replica's own limits (environment, docs/configuration.md). */

export interface RateLimitSettings {
  /**
   * How often each replica adds its rate-limit counts to the database and reads the others'
   * (`RATE_LIMIT_SYNC_MS`): across replicas a limit can be passed by what the others admit in
   * that time.
   */
  syncIntervalMs: number;
}
export const RATE_LIMIT_SETTINGS = Symbol('RATE_LIMIT_SETTINGS');

/**
 * Limits of one replica, whatever the key (docs/operations.md "Several replicas"): past them a
 * request is refused with 503 `service_unavailable` and `Retry-After: 1`, so that an overloaded
 * replica refuses cleanly instead of slowing every stream it carries. 0: no limit.
 */
export interface ReplicaLimitSettings {
  /**
   * Client TCP connections open on this replica (`MAX_CLIENT_CONNECTIONS`). A connection accepted
   * past it has its first request refused and is closed; health probes and `/metrics` are still
   * answered on it (and it is closed after them too).
   */
  maxClientConnections: number;
  /** Streaming calls in flight on this replica (`MAX_STREAMS`), from admission until their response is over. */
  maxStreams: number;
}
export const REPLICA_LIMIT_SETTINGS = Symbol('REPLICA_LIMIT_SETTINGS');
