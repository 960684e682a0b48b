import { mkdirSync } from 'node:fs';
import { DataSource, DataSourceOptions } from 'typeorm';
import { ApiKey } from '../auth/api-key.entity';
import { QuotaOwner } from '../auth/quota-owner.entity';
import { UsageRecord } from '../metering/usage-record.entity';
import { VideoTask } from '../video/video-task.entity';
import { Initial1763800000000 } from './migrations/1763800000000-Initial';
import { VideoTasks1764100000000 } from './migrations/1764100000000-VideoTasks';
import { UsageTotals1764400000000 } from './migrations/1764400000000-UsageTotals';
import { Catalog1764700000000 } from './migrations/1764700000000-Catalog';
import { AdminAudit1764800000000 } from './migrations/1764800000000-AdminAudit';
import { VideoTaskPricing1764900000000 } from './migrations/1764900000000-VideoTaskPricing';
import { ConsoleSessions1765000000000 } from './migrations/1765000000000-ConsoleSessions';
import { BudgetPeriods1765300000000 } from './migrations/1765300000000-BudgetPeriods';
import { LinesTried1765400000000 } from './migrations/1765400000000-LinesTried';
import { PriceSheets1765500000000 } from './migrations/1765500000000-PriceSheets';
import { RateLimits1765100000000 } from './migrations/1765100000000-RateLimits';
import { UsageTags1765200000000 } from './migrations/1765200000000-UsageTags';
import type { DatabaseSettings } from '../config/settings/database.settings';
import { embeddedDriver, openEmbeddedDatabase } from './embedded-pool';

export const ENTITIES = [QuotaOwner, ApiKey, UsageRecord, VideoTask];
export const MIGRATIONS = [
  Initial1763800000000,
  VideoTasks1764100000000,
  UsageTotals1764400000000,
  Catalog1764700000000,
  AdminAudit1764800000000,
  VideoTaskPricing1764900000000,
  ConsoleSessions1765000000000,
  RateLimits1765100000000,
  UsageTags1765200000000,
  BudgetPeriods1765300000000,
  LinesTried1765400000000,
  PriceSheets1765500000000,
];

export async function dataSourceOptions(settings: DatabaseSettings): Promise<DataSourceOptions> {
  const common = {
    type: 'postgres' as const,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
  };
  if (settings.url) {
    return { ...common, url: settings.url, poolSize: settings.poolSize ?? 10, applicationName: 'model-gateway' };
  }
  if (settings.embedded) return { ...common, driver: embeddedDriver(settings.embedded, false) };
  const database = await openEmbeddedDatabase(embeddedDirectory(settings.dataDir));
  return { ...common, driver: embeddedDriver(database) };
}

function embeddedDirectory(dataDir: string): string | undefined {
  if (dataDir === 'memory') return undefined;
  mkdirSync(dataDir, { recursive: true });
  return dataDir;
}

/** True when the data source runs on the embedded engine (PGlite) rather than a PostgreSQL server. */
export function isEmbedded(dataSource: DataSource): boolean {
  return (dataSource.options as { driver?: unknown }).driver !== undefined;
}

/** Any fixed number shared by every replica: the advisory lock that serialises migrations. */
const MIGRATION_LOCK = 7_318_204_551;

/**
 * Opens the data source and applies pending migrations. Replicas starting together take a
 * PostgreSQL advisory lock first, so exactly one of them migrates and the others find the
 * work done. (An embedded folder belongs to one process, which holds its lock file while the
 * engine is open: see data-dir-lock.ts. Another process on the folder refuses before opening it.)
 */
export async function openDataSource(settings: DatabaseSettings): Promise<DataSource> {
  const dataSource = new DataSource(await dataSourceOptions(settings));
  await dataSource.initialize();
  if (!settings.url) {
    await dataSource.runMigrations({ transaction: 'each' });
    return dataSource;
  }
  const lockRunner = dataSource.createQueryRunner();
  try {
    await lockRunner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await lockRunner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await lockRunner.release();
  }
  return dataSource;
}
