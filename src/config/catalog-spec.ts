import type { ModelConfig, PriceTable, PriceTier, UpstreamConfig } from './gateway-config';
import { nanoToDecimal } from './money';

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
    lines: [...model.lines],
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
    prices: pricesOf(tier.prices),
  };
}

function pricesOf(prices: PriceTable): Record<string, string> {
  return Object.fromEntries(Object.entries(prices).flatMap(([name, nano]) => (nano === undefined ? [] : [[name, nanoToDecimal(nano)]])));
}
