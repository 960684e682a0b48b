import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { GovernanceModule } from '../governance/governance.module';
import { ForwardedCall } from './forwarded-call';
import { ModelAccessGuard } from './model-access.guard';
import { NativeCallService } from './native-call.service';

/**
 * The engine every entry forwards through: admission (key scope, model, balance, rate limits), the call to
 * an upstream line with failover, and the metered pass-through of its answer.
 */
@Module({
  imports: [CatalogModule, UpstreamModule, GovernanceModule],
  providers: [ForwardedCall, NativeCallService, ModelAccessGuard],
  exports: [ForwardedCall, NativeCallService, ModelAccessGuard, CatalogModule, UpstreamModule, GovernanceModule],
})
export class ForwardingModule {}
