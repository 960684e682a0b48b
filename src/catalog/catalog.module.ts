import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MeteringModule } from '../metering/metering.module';
import { CatalogService } from './catalog.service';
import { ModelsController } from './models.controller';

@Module({
  imports: [AuthModule, MeteringModule],
  controllers: [ModelsController],
  providers: [CatalogService],
  exports: [CatalogService, AuthModule, MeteringModule],
})
export class CatalogModule {}
