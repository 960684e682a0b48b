import { Module } from '@nestjs/common';
import { QuotaService } from './quota.service';
import { UsageWriter } from './usage-writer.service';
import { UsageRetention } from './usage-retention.service';

@Module({
  providers: [QuotaService, UsageWriter, UsageRetention],
  exports: [QuotaService, UsageWriter],
})
export class MeteringModule {}
