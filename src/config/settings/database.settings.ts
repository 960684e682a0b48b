import type { EmbeddedEngine } from '../../database/embedded-pool';
import { positiveWholeFrom } from '../env-numbers';

/** Where the data lives: a PostgreSQL URL, or the embedded engine (a folder, or `memory`). */
export interface DatabaseSettings {
  url?: string;
  dataDir: string;
  /** An already open embedded database to share (tests run two gateways on one); the caller closes it. */
  embedded?: EmbeddedEngine;
  poolSize?: number;
}

export function databaseSettingsFromEnv(env: NodeJS.ProcessEnv): DatabaseSettings {
  return {
    url: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR || './data',
    poolSize: env.DATABASE_POOL_SIZE ? positiveWholeFrom(env, 'DATABASE_POOL_SIZE', 10) : undefined,
  };
}
