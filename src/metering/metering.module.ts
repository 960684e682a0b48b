import { Module } from '@nestjs/common';
import { QuotaService } from './quota.service';
import { UsageWriter } from './usage-writer.service';
import { UsageRetention } from './usage-retention.service';
import { GovernanceModule } from '../governance/governance.module';

@Module({
  imports: [GovernanceModule],
  providers: [QuotaService, UsageWriter, UsageRetention],
  exports: [QuotaService, UsageWriter, GovernanceModule],
})
export class MeteringModule {}
