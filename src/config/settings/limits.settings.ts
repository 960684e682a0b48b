/** Settings of rate limits (environment, docs/configuration.md). */

export interface RateLimitSettings {
  /**
   * How often each replica adds its rate-limit counts to the database and reads the others'
   * (`RATE_LIMIT_SYNC_MS`): across replicas a limit can be passed by what the others admit in
   * that time.
   */
  syncIntervalMs: number;
}
export const RATE_LIMIT_SETTINGS = Symbol('RATE_LIMIT_SETTINGS');
