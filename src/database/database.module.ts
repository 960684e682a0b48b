import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { DatabaseSettings } from '../config/settings/database.settings';
import { openDataSource } from './data-source';
import { EmbeddedStatistics } from './embedded-statistics.service';

@Global()
@Module({})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  static forRoot(settings: DatabaseSettings): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [{ provide: DataSource, useFactory: () => openDataSource(settings) }, EmbeddedStatistics],
      exports: [DataSource],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    // Runs after every other module's shutdown hook (the usage writer flushes first).
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
