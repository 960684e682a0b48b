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

@Module({
  imports: [CatalogModule],
  controllers: [OwnersController, KeysController, UsageController, UpstreamsController, CatalogModelsController, ReloadController, AuditController],
  providers: [
    AdminGuard,
    AdminService,
    {
      provide: CatalogAdminService,
      useFactory: (sync: CatalogSync, dataSource: DataSource) => new CatalogAdminService(sync, new AuditLog(dataSource)),
      inject: [CatalogSync, DataSource],
    },
  ],
  exports: [CatalogAdminService],
})
export class AdminModule {}
