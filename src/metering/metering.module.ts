import { Module } from '@nestjs/common';
import { QuotaService } from './quota.service';
import { UsageWriter } from './usage-writer.service';

@Module({
  providers: [QuotaService, UsageWriter],
  exports: [QuotaService, UsageWriter],
})
export class MeteringModule {}
