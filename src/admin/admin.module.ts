import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CatalogSync } from '../catalog/catalog-sync.service';
import { AuditLog } from './audit-log';
import { CatalogModule } from '../catalog/catalog.module';
import { AdminGuard } from './admin.guard';
import { AdminService } from './admin.service';
import { KeysController } from './keys.controller';
import { OwnersController } from './owners.controller';
import { UsageController } from './usage.controller';
import { CatalogModelsController, ReloadController, UpstreamsController } from './catalog.controller';
import { CatalogAdminService } from './catalog-admin.service';
import { AuditController } from './audit.controller';
import { AlertsController } from './alerts.controller';
import { ConsoleSessions } from './console-sessions';
import { SessionController } from './session.controller';
import { LinesController, VideoTasksController } from './operations.controller';
import { UpstreamModule } from '../upstream/upstream.module';
import { CONSOLE_SETTINGS, ConsoleSettings } from '../config/settings/console.settings';

@Module({
  imports: [CatalogModule, UpstreamModule],
  controllers: [
    SessionController,
    OwnersController,
    KeysController,
    UsageController,
    UpstreamsController,
    CatalogModelsController,
    ReloadController,
    AuditController,
    AlertsController,
    LinesController,
    VideoTasksController,
  ],
  providers: [
    AdminGuard,
    AdminService,
    { provide: AuditLog, useFactory: (dataSource: DataSource) => new AuditLog(dataSource), inject: [DataSource] },
    {
      provide: ConsoleSessions,
      useFactory: (dataSource: DataSource, settings: ConsoleSettings) => new ConsoleSessions(dataSource, settings.sessionTtlMs),
      inject: [DataSource, CONSOLE_SETTINGS],
    },
    {
      provide: CatalogAdminService,
      useFactory: (sync: CatalogSync, audit: AuditLog) => new CatalogAdminService(sync, audit),
      inject: [CatalogSync, AuditLog],
    },
  ],
  exports: [CatalogAdminService],
})
export class AdminModule {}
