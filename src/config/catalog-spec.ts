import type { ModelConfig, PriceTable, PriceTier, UpstreamConfig } from './gateway-config';
import { decimalToNano, nanoToDecimal } from './money';
import { lineItemsOf, retrySpecOf } from './model-lines';

/**
 * The JSON form of a catalog item: the configuration-file item (DESIGN.md section 3) with every
 * default filled in and prices as exact decimal strings. It is what the database stores and what
 * the admin API shows; `parseUpstreamItem` and `parseModelItem` read it back to the same config.
 */
export type ItemSpec = Record<string, unknown>;

/** A line without its vendor key, which is kept apart (and never shown). */
export function upstreamSpecOf(upstream: UpstreamConfig): ItemSpec {
  return {
    id: upstream.id,
    base_url: upstream.baseUrl,
    ...(upstream.auth ? { auth: upstream.auth } : {}),
    ...(upstream.maxConcurrency !== undefined ? { max_concurrency: upstream.maxConcurrency } : {}),
    timeout_ms: upstream.timeoutMs,
  };
}

export function modelSpecOf(model: ModelConfig): ItemSpec {
  return {
    id: model.id,
    upstream_model: model.upstreamModel,
    interfaces: [...model.interfaces],
    lines: lineItemsOf(model),
    ...(model.retry ? { retry: retrySpecOf(model.retry) } : {}),
    capabilities: { image_input: model.capabilities.imageInput },
    ...(model.maxTokens !== undefined ? { max_tokens: model.maxTokens } : {}),
    prices: pricesOf(model.prices),
    price_tiers: model.priceTiers.map(tierSpecOf),
  };
}

function tierSpecOf(tier: PriceTier): ItemSpec {
  return {
    ...(tier.resolutions ? { resolution: [...tier.resolutions] } : {}),
    ...(tier.videoInput !== undefined ? { video_input: tier.videoInput } : {}),
    ...(tier.maxOutputPixels !== undefined ? { max_output_pixels: tier.maxOutputPixels } : {}),
    ...(tier.inputTokensAbove !== undefined ? { input_tokens_above: tier.inputTokensAbove } : {}),
    prices: pricesOf(tier.prices),
  };
}

function pricesOf(prices: PriceTable): Record<string, string> {
  return Object.fromEntries(Object.entries(prices).flatMap(([name, nano]) => (nano === undefined ? [] : [[name, nanoToDecimal(nano)]])));
}

/** A model's prices and tiers alone, kept with what is priced later (a video task, at its submit). */
export type Pricing = Pick<ModelConfig, 'prices' | 'priceTiers'>;

/** `Pricing` in the JSON form: decimal strings, tiers as the file writes them. */
export interface PricingSpec {
  prices: Record<string, string>;
  price_tiers: Array<{ resolution?: string[]; video_input?: boolean; max_output_pixels?: number; input_tokens_above?: number; prices: Record<string, string> }>;
}

export function pricingSpecOf(model: Pricing): PricingSpec {
  return { prices: pricesOf(model.prices), price_tiers: model.priceTiers.map(tierSpecOf) as PricingSpec['price_tiers'] };
}

/** Reads `pricingSpecOf`'s form back; it was written by the gateway, so it is taken as valid. */
export function pricingOf(spec: PricingSpec): Pricing {
  const table = (prices: Record<string, string>) => Object.fromEntries(Object.entries(prices).map(([name, price]) => [name, decimalToNano(price, name)]));
  return {
    prices: table(spec.prices),
    priceTiers: spec.price_tiers.map((tier) => ({
      ...(tier.resolution ? { resolutions: tier.resolution } : {}),
      ...(tier.video_input !== undefined ? { videoInput: tier.video_input } : {}),
      ...(tier.max_output_pixels !== undefined ? { maxOutputPixels: tier.max_output_pixels } : {}),
      ...(tier.input_tokens_above !== undefined ? { inputTokensAbove: tier.input_tokens_above } : {}),
      prices: table(tier.prices),
    })),
  };
}
