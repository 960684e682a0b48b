import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MeteringModule } from '../metering/metering.module';
import { CatalogService } from './catalog.service';
import { CatalogSync } from './catalog-sync.service';
import { UpstreamModule } from '../upstream/upstream.module';
import { ModelsController } from './models.controller';

@Module({
  imports: [AuthModule, MeteringModule, UpstreamModule],
  controllers: [ModelsController],
  providers: [CatalogService, CatalogSync],
  exports: [CatalogService, CatalogSync, AuthModule, MeteringModule],
})
export class CatalogModule {}
