import { Logger } from '@nestjs/common';
import type { GatewayConfig, ModelConfig } from '../config/gateway-config';
import { CatalogService } from './catalog.service';

function model(id: string, overrides: Partial<ModelConfig> = {}): ModelConfig {
  return {
    id,
    upstreamModel: `up-${id}`,
    interfaces: ['chat_completions'],
    lines: ['line-a'],
    capabilities: { imageInput: false },
    prices: {},
    priceTiers: [],
    ...overrides,
  };
}

function configWith(models: ModelConfig[]): GatewayConfig {
  return { upstreams: [], models, owners: [], keys: [] };
}

describe(CatalogService.name, () => {
  let warn: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });

  afterEach(() => warn.mockRestore());

  it('logs one warning at start naming a billable model without any price', () => {
    const catalog = new CatalogService(configWith([model('priced', { prices: { input_tokens: 1n } }), model('forgotten')]));

    catalog.onModuleInit();

    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toContain('model "forgotten" (models[1]) has no prices');
  });

  it('logs nothing for a model priced at an explicit 0', () => {
    new CatalogService(configWith([model('free', { prices: { input_tokens: 0n } })])).onModuleInit();

    expect(warn).not.toHaveBeenCalled();
  });
});
