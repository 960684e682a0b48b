import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { AdminGuard } from './admin.guard';
import { AdminService } from './admin.service';
import { KeysController } from './keys.controller';
import { OwnersController } from './owners.controller';
import { UsageController } from './usage.controller';

@Module({
  imports: [CatalogModule],
  controllers: [OwnersController, KeysController, UsageController],
  providers: [AdminGuard, AdminService],
})
export class AdminModule {}
