/** Settings of API-key checks (environment, docs/configuration.md). */

export interface KeyCacheSettings {
  /** How long a found key is trusted without asking the database again. */
  ttlMs: number;
  /** How long an unknown key stays unknown (kept short: a new key should work soon). */
  negativeTtlMs: number;
}
export const KEY_CACHE_SETTINGS = Symbol('KEY_CACHE_SETTINGS');

export interface KeyFailureSettings {
  /** Refused keys one client address may present per window before it gets 429; 0 turns the limit off. */
  limit: number;
  /** Length of the fixed window, from the address's first refused key. */
  windowMs: number;
}
export const KEY_FAILURE_SETTINGS = Symbol('KEY_FAILURE_SETTINGS');
