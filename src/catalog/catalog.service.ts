import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig, ModelConfig } from '../config/gateway-config';
import { mayUseModel, Principal } from '../auth/principal';

/** The model catalog of the configuration file. */
@Injectable()
export class CatalogService {
  private readonly models = new Map<string, ModelConfig>();
  /** Listing timestamp (`created`): when this catalog was loaded. */
  readonly loadedAt = Math.floor(Date.now() / 1000);

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    for (const model of config.models) this.models.set(model.id, model);
  }

  /** Only client-facing ids match: upstream names and display names are not identifiers. */
  find(id: string): ModelConfig | undefined {
    return this.models.get(id);
  }

  usableBy(principal: Principal): ModelConfig[] {
    return [...this.models.values()].filter((model) => mayUseModel(principal, model.id));
  }
}
