import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig, ModelConfig } from '../config/gateway-config';
import { mayUseModel, Principal } from '../auth/principal';
import { unpricedModelWarnings } from '../config/metered-figures';

/**
 * The model catalog: the configuration file's at start-up, then the live catalog of the
 * database (CatalogSync). A change replaces the whole set at once; a call keeps the model it
 * was admitted with, so it finishes on the catalog (and prices) it started with.
 */
@Injectable()
export class CatalogService implements OnModuleInit {
  private readonly logger = new Logger('Catalog');
  private models = new Map<string, ModelConfig>();
  /** Listing timestamp (`created`): when this catalog was loaded. */
  readonly loadedAt = Math.floor(Date.now() / 1000);

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    this.replace(config.models);
  }

  /** A model that would bill nothing still starts, with a warning in the start-up log. */
  onModuleInit(): void {
    for (const warning of unpricedModelWarnings(this.config.models)) this.logger.warn(warning);
  }

  replace(models: ModelConfig[]): void {
    this.models = new Map(models.map((model) => [model.id, model]));
  }

  /** Only client-facing ids match: upstream names and display names are not identifiers. */
  find(id: string): ModelConfig | undefined {
    return this.models.get(id);
  }

  all(): ModelConfig[] {
    return [...this.models.values()];
  }

  usableBy(principal: Principal): ModelConfig[] {
    return this.all().filter((model) => mayUseModel(principal, model.id));
  }
}
