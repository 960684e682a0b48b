import type { PriceFieldName } from '../config/prices';

/** What a usage figure counts. Each unit has a counter of its own, so no sum adds tokens to images. */
export type UsageUnit = 'tokens' | 'images' | 'seconds' | 'characters';

export const USAGE_UNIT_NAMES: readonly UsageUnit[] = ['tokens', 'images', 'seconds', 'characters'];

/**
 * The unit of every figure a usage record may hold: the priced figures (prices.ts) and
 * `reasoning_tokens`, kept for information. Typed by the price table, so a figure added there
 * does not compile until its unit is named here.
 */
export const USAGE_UNITS: { readonly [figure in PriceFieldName | 'reasoning_tokens']: UsageUnit } = {
  input_tokens: 'tokens',
  cached_input_tokens: 'tokens',
  cache_write_input_tokens: 'tokens',
  cache_write_5m_input_tokens: 'tokens',
  cache_write_1h_input_tokens: 'tokens',
  output_tokens: 'tokens',
  reasoning_tokens: 'tokens',
  input_text_tokens: 'tokens',
  input_image_tokens: 'tokens',
  output_text_tokens: 'tokens',
  output_image_tokens: 'tokens',
  thinking_tokens: 'tokens',
  output_video_tokens: 'tokens',
  input_characters: 'characters',
  output_images: 'images',
  input_images: 'images',
  input_image_count: 'images',
  output_seconds: 'seconds',
  input_seconds: 'seconds',
};
