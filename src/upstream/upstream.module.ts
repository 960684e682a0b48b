import { Module } from '@nestjs/common';
import { ForwardService } from './forward.service';
import { LineRegistry } from './line-registry';
import { UpstreamClient } from './upstream-client';

@Module({
  providers: [LineRegistry, UpstreamClient, ForwardService],
  exports: [LineRegistry, ForwardService, UpstreamClient],
})
export class UpstreamModule {}
