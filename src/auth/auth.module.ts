import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { ApiKeyRepository } from './api-key.repository';
import { ApiKeyGuard } from './api-key.guard';
import { KeyService } from './key.service';
import { KeyFailureLimiter } from './key-failure-limiter';

@Module({
  providers: [ApiKeyRepository, KeyService, KeyFailureLimiter, ApiKeyGuard],
  exports: [ApiKeyRepository, KeyService, KeyFailureLimiter, ApiKeyGuard],
})
export class AuthModule implements OnModuleInit {
  constructor(
    private readonly repository: ApiKeyRepository,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** The file's owners and keys exist before the first request is admitted. */
  async onModuleInit(): Promise<void> {
    await this.repository.applyConfig(this.config.owners, this.config.keys);
  }
}
