/** Settings of balances, the usage writer and usage retention (environment, docs/configuration.md). */

export interface QuotaSettings {
  /** How long a balance read from the database is trusted. */
  balanceTtlMs: number;
}
export const QUOTA_SETTINGS = Symbol('QUOTA_SETTINGS');

export interface UsageWriterSettings {
  /** Longest time a record waits before its batch is written. */
  flushIntervalMs: number;
  /** Most records per write: one transaction, a COPY of the records' lines. */
  batchSize: number;
  /** On shutdown, how long to keep retrying while the database is away. */
  shutdownDeadlineMs: number;
}
export const USAGE_WRITER_SETTINGS = Symbol('USAGE_WRITER_SETTINGS');

export interface UsageRetentionSettings {
  /** Usage records older than this many days are deleted; 0 keeps them forever. */
  days: number;
  /** How often a round runs. */
  intervalMs: number;
  /** Records deleted per statement (one short transaction each). */
  batchSize: number;
}
export const USAGE_RETENTION_SETTINGS = Symbol('USAGE_RETENTION_SETTINGS');
