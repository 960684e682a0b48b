/** Settings of the live catalog (environment, docs/configuration.md). */

export interface CatalogSettings {
  /**
   * How often a replica compares its catalog with the database's (`CATALOG_CHECK_MS`, default
   * 1000), in case it missed a notification; on real PostgreSQL a change arrives by
   * `LISTEN/NOTIFY` at once.
   */
  checkIntervalMs: number;
  /** `GATEWAY_SECRET_KEY`, 32 bytes: seals literal vendor keys given through the admin API. Absent: only `${VAR}` references. */
  secretKey?: Buffer;
  /** The configuration file (`GATEWAY_CONFIG`) that SIGHUP and `POST /admin/reload` read again; absent: nothing to reload. */
  configFile?: string;
}
export const CATALOG_SETTINGS = Symbol('CATALOG_SETTINGS');

/** GATEWAY_SECRET_KEY as 32 bytes (64 hex digits or base64); throws naming the variable, never its value. */
export function secretKeyFrom(env: NodeJS.ProcessEnv): Buffer | undefined {
  const text = env.GATEWAY_SECRET_KEY?.trim();
  if (!text) return undefined;
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error('GATEWAY_SECRET_KEY must be 32 bytes, written as 64 hex digits or in base64 (openssl rand -hex 32)');
  return key;
}
