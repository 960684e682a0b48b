import type { InterfaceName, ModelConfig } from './gateway-config';
import { PRICE_FALLBACKS, PriceFieldName } from './prices';

/**
 * The priced figures each interface's meter can report: usage-figures.ts for native answers,
 * the translation usage decoders, video-wire.ts and video-estimate.ts for video tasks.
 * A translated call is metered by the upstream interface it went to, which is one of the
 * model's own, so the entry a client called does not change what a model can be billed for.
 * metered-figures.spec.ts holds each meter to this table.
 */
export const METERED_FIGURES: { readonly [name in InterfaceName]: readonly PriceFieldName[] } = {
  chat_completions: ['input_tokens', 'cached_input_tokens', 'output_tokens'],
  responses: ['input_tokens', 'cached_input_tokens', 'output_tokens'],
  messages: ['input_tokens', 'cached_input_tokens', 'cache_write_input_tokens', 'cache_write_5m_input_tokens', 'cache_write_1h_input_tokens', 'output_tokens'],
  embeddings: ['input_tokens'],
  images_a: ['input_text_tokens', 'input_image_tokens', 'output_text_tokens', 'output_image_tokens'],
  images_b: ['output_images', 'input_images'],
  images_c: ['input_tokens', 'cached_input_tokens', 'output_text_tokens', 'output_image_tokens', 'thinking_tokens'],
  video_b: ['output_video_tokens'],
  video_c: ['output_seconds', 'input_seconds', 'input_image_count'],
  speech_c: ['input_characters'],
};

/** The figures a model with these interfaces is metered by, each once. */
export function meteredFiguresOf(interfaces: readonly InterfaceName[]): PriceFieldName[] {
  const figures = new Set(interfaces.flatMap((name) => METERED_FIGURES[name]));
  return [...figures];
}

/**
 * The prices that calls metered by these figures can be billed at: the figures' own, and every
 * price down their fallbacks (cached input without a cached-input price pays the input price; a
 * 1-hour cache write the cache-write price, and without that the input price).
 */
export function pricesUsedBy(figures: readonly PriceFieldName[]): Set<PriceFieldName> {
  const names = new Set<PriceFieldName>(figures);
  for (const figure of figures) {
    for (let fallback = PRICE_FALLBACKS[figure]; fallback !== undefined; fallback = PRICE_FALLBACKS[fallback]) names.add(fallback);
  }
  return names;
}

/**
 * Start-up warnings for billable models that name no price at all, neither in `prices` nor in
 * a tier: every call of them costs 0, which is more often an omission than a choice. An
 * explicit 0 (`prices: { input_tokens: 0 }`) says it is meant and gives no warning.
 */
export function unpricedModelWarnings(models: readonly ModelConfig[]): string[] {
  return models.flatMap((model, index) => {
    const metered = meteredFiguresOf(model.interfaces);
    const priced = Object.keys(model.prices).length > 0 || model.priceTiers.some((tier) => Object.keys(tier.prices).length > 0);
    if (metered.length === 0 || priced) return [];
    return [
      `model "${model.id}" (models[${index}]) has no prices, so every call of it costs 0; ` +
        `price what it meters (${metered.join(', ')}), or set one to 0 if it is free`,
    ];
  });
}
