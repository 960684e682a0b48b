import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';

const PING_TIMEOUT_MS = 2_000;

/** Readiness of the database: reachable, and every migration of this build applied. */
@Injectable()
export class DatabaseHealthIndicator {
  private migrationsApplied = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly indicators: HealthIndicatorService,
  ) {}

  async isReady(key: string) {
    const indicator = this.indicators.check(key);
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), PING_TIMEOUT_MS);
      // Once applied, migrations stay applied for the life of this process.
      if (!this.migrationsApplied) this.migrationsApplied = !(await this.dataSource.showMigrations());
      if (!this.migrationsApplied) return indicator.down({ message: 'migrations pending' });
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: error instanceof Error ? error.message : String(error) });
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
