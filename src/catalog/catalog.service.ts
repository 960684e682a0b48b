import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig, ModelConfig } from '../config/gateway-config';
import { mayUseModel, Principal } from '../auth/principal';
import { unpricedModelWarnings } from '../config/metered-figures';

/** The model catalog of the configuration file. */
@Injectable()
export class CatalogService implements OnModuleInit {
  private readonly logger = new Logger('Catalog');
  private readonly models = new Map<string, ModelConfig>();
  /** Listing timestamp (`created`): when this catalog was loaded. */
  readonly loadedAt = Math.floor(Date.now() / 1000);

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    for (const model of config.models) this.models.set(model.id, model);
  }

  /** A model that would bill nothing still starts, with a warning in the start-up log. */
  onModuleInit(): void {
    for (const warning of unpricedModelWarnings(this.config.models)) this.logger.warn(warning);
  }

  /** Only client-facing ids match: upstream names and display names are not identifiers. */
  find(id: string): ModelConfig | undefined {
    return this.models.get(id);
  }

  usableBy(principal: Principal): ModelConfig[] {
    return [...this.models.values()].filter((model) => mayUseModel(principal, model.id));
  }
}
