import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { AdminGuard } from './admin.guard';
import { AdminService } from './admin.service';
import { KeysController } from './keys.controller';
import { OwnersController } from './owners.controller';
import { UsageController } from './usage.controller';
import { CatalogModelsController, ReloadController, UpstreamsController } from './catalog.controller';
import { CatalogAdminService } from './catalog-admin.service';

@Module({
  imports: [CatalogModule],
  controllers: [OwnersController, KeysController, UsageController, UpstreamsController, CatalogModelsController, ReloadController],
  providers: [AdminGuard, AdminService, CatalogAdminService],
})
export class AdminModule {}
