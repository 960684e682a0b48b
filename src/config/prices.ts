/**
 * The metered figures a model may be priced on (SPEC.md "Metered by"), named after the
 * figures themselves. Token figures are priced per 1M tokens; counted figures (images,
 * seconds) per unit.
 *
 * `cached_input_tokens` and `cache_write_input_tokens` fall back to the `input_tokens` price
 * when a model does not set them, and the cache writes by duration (`cache_write_5m_input_tokens`,
 * `cache_write_1h_input_tokens`) to the `cache_write_input_tokens` price, and so on to the input
 * price (PRICE_FALLBACKS): the billing code applies that fallback, and the loader counts a price
 * reached only that way as used.
 */

export type PriceUnit = 'per_million_tokens' | 'per_unit';

export const PRICE_FIELDS = {
  input_tokens: 'per_million_tokens',
  cached_input_tokens: 'per_million_tokens',
  cache_write_input_tokens: 'per_million_tokens',
  /** Messages cache writes by how long the entry lives; part of `cache_write_input_tokens`. */
  cache_write_5m_input_tokens: 'per_million_tokens',
  cache_write_1h_input_tokens: 'per_million_tokens',
  output_tokens: 'per_million_tokens',
  input_text_tokens: 'per_million_tokens',
  input_image_tokens: 'per_million_tokens',
  output_text_tokens: 'per_million_tokens',
  output_image_tokens: 'per_million_tokens',
  thinking_tokens: 'per_million_tokens',
  output_video_tokens: 'per_million_tokens',
  /** Speech: characters of the text read out, priced per 1M characters like tokens. */
  input_characters: 'per_million_tokens',
  output_images: 'per_unit',
  input_images: 'per_unit',
  output_seconds: 'per_unit',
  input_seconds: 'per_unit',
  input_image_count: 'per_unit',
} as const satisfies Record<string, PriceUnit>;

export type PriceFieldName = keyof typeof PRICE_FIELDS;

/**
 * The price a figure is billed at when the model does not price it (pricing.ts `costOf`), followed
 * until a price is set: a 1-hour cache write without its own price pays the cache-write price,
 * and without that the input price.
 */
export const PRICE_FALLBACKS: Partial<Record<PriceFieldName, PriceFieldName>> = {
  cached_input_tokens: 'input_tokens',
  cache_write_input_tokens: 'input_tokens',
  cache_write_5m_input_tokens: 'cache_write_input_tokens',
  cache_write_1h_input_tokens: 'cache_write_input_tokens',
};

export const PRICE_FIELD_NAMES = Object.keys(PRICE_FIELDS) as PriceFieldName[];

/** Own keys only, so names such as `constructor` or `toString` are not mistaken for figures. */
export function isPriceFieldName(name: string): name is PriceFieldName {
  return Object.hasOwn(PRICE_FIELDS, name);
}

/** How a figure is priced, or undefined for a name that is not a metered figure. */
export function priceUnitOf(name: string): PriceUnit | undefined {
  return isPriceFieldName(name) ? PRICE_FIELDS[name] : undefined;
}
