import type { PriceTable, PriceTier } from '../config/gateway-config';
import type { Pricing } from '../config/catalog-spec';
import type { UsageFigures } from './usage-figures';
import { PRICE_FALLBACKS, type PriceFieldName, priceUnitOf } from '../config/prices';

const PER_MILLION = 1_000_000n;

/** Figures billed through other figures, or not billed at all. */
const NOT_PRICED_DIRECTLY = new Set([
  'input_tokens',
  'cached_input_tokens',
  'cache_write_input_tokens',
  'cache_write_5m_input_tokens',
  'cache_write_1h_input_tokens',
  'reasoning_tokens',
]);

function whole(value: number | undefined): bigint {
  return value === undefined ? 0n : BigInt(Math.round(value));
}

/** A figure's own price, else the first price set down its fallbacks (PRICE_FALLBACKS), else 0. */
function priceOf(prices: PriceTable, name: PriceFieldName): bigint {
  for (let current: PriceFieldName | undefined = name; current !== undefined; current = PRICE_FALLBACKS[current]) {
    const price = prices[current];
    if (price !== undefined) return price;
  }
  return 0n;
}

/**
 * Cost of one call in nano-units, exact: token figures are priced per 1M tokens and summed as
 * integers before one rounding (half up); counted figures (images, seconds) per unit.
 *
 * Input figures overlap (usage-figures.ts), so each input token is billed once: cache reads at
 * the cached-input price, the cache writes by duration at theirs, the rest of the cache-write
 * total (when the upstream's split does not cover it) at the cache-write price, and what is left
 * of `input_tokens` at the input price. A price the model lacks falls back (PRICE_FALLBACKS).
 * A split that adds up to more than its total is billed in full, out of `input_tokens`, so no
 * input token is billed twice whichever of the two the upstream got wrong.
 */
export function costOf(figures: UsageFigures | undefined, prices: PriceTable): bigint {
  if (!figures) return 0n;
  const input = whole(figures.input_tokens);
  const cached = whole(figures.cached_input_tokens);
  const write5m = whole(figures.cache_write_5m_input_tokens);
  const write1h = whole(figures.cache_write_1h_input_tokens);
  const reportedWrite = whole(figures.cache_write_input_tokens);
  const cacheWrite = reportedWrite > write5m + write1h ? reportedWrite : write5m + write1h;
  const unsplitWrite = cacheWrite - write5m - write1h;
  const uncached = input - cached - cacheWrite > 0n ? input - cached - cacheWrite : 0n;

  let perMillion =
    uncached * priceOf(prices, 'input_tokens') +
    cached * priceOf(prices, 'cached_input_tokens') +
    unsplitWrite * priceOf(prices, 'cache_write_input_tokens') +
    write5m * priceOf(prices, 'cache_write_5m_input_tokens') +
    write1h * priceOf(prices, 'cache_write_1h_input_tokens');
  let perUnit = 0n;
  // for…in rather than Object.entries: no array per figure, on every call.
  for (const name in figures) {
    if (NOT_PRICED_DIRECTLY.has(name)) continue;
    const price = prices[name];
    if (price === undefined) continue;
    if (priceUnitOf(name) === 'per_million_tokens') perMillion += whole(figures[name]) * price;
    else perUnit += whole(figures[name]) * price;
  }
  return (perMillion + PER_MILLION / 2n) / PER_MILLION + perUnit;
}

/**
 * A text call's cost from its figures: at the model's prices, or at a long-context tier's when
 * the call's `input_tokens` passes its threshold (as vendors do, the tier prices the whole call).
 * Only tiers that name `input_tokens_above` apply to text calls; the other conditions describe
 * video and image calls. A model without tiers is priced from its own table, without a copy.
 */
export function callCostOf(figures: UsageFigures | undefined, pricing: Pricing): bigint {
  if (!figures || pricing.priceTiers.length === 0) return costOf(figures, pricing.prices);
  const inputTokens = figures.input_tokens;
  const tier = pricing.priceTiers.find((candidate) => candidate.inputTokensAbove !== undefined && tierMatches(candidate, { inputTokens }));
  return costOf(figures, tier ? overlaid(pricing.prices, tier) : pricing.prices);
}

/**
 * What a record's price depended on beyond its figures, as the record keeps it (`price_basis`);
 * none for text calls, whose figures say it all.
 */
export interface PriceBasis {
  /** Video: the resolution the call was priced at. */
  resolution?: string;
  /** Video: whether the call had video input. */
  video_input?: boolean;
  /** Images format B: each returned image's pixels, in answer order; null where unreadable. */
  output_pixels?: Array<number | null>;
}

/**
 * A record's cost from its figures, the prices it was billed at and its basis: what the call
 * was charged, and what the spend audit recomputes from the stored record.
 */
export function recordCostOf(figures: UsageFigures | undefined, pricing: Pricing, basis: PriceBasis | null | undefined): bigint {
  if (!basis) return callCostOf(figures, pricing);
  if (basis.output_pixels) return imagesCostOf(figures, pricing, basis.output_pixels);
  return costOf(figures, pricesFor(pricing, { resolution: basis.resolution, videoInput: basis.video_input }));
}

/**
 * Images format B: the input images at the base prices, plus each billed output image at the
 * prices of its pixel tier. Images beyond those with a size are priced without a pixel tier.
 */
function imagesCostOf(figures: UsageFigures | undefined, pricing: Pricing, pixels: ReadonlyArray<number | null>): bigint {
  if (!figures) return 0n;
  const { output_images: outputImages = 0, ...rest } = figures;
  const billed = Math.round(outputImages);
  const sized = Math.min(billed, pixels.length);
  let total = costOf({ ...rest, output_images: billed - sized }, pricesFor(pricing, {}));
  for (let index = 0; index < sized; index++) {
    total += pricesFor(pricing, { outputPixels: pixels[index] ?? undefined }).output_images ?? 0n;
  }
  return total;
}

/**
 * What a call's price may depend on (SPEC.md: video prices tier by resolution and by presence of
 * video input; format B image prices by output pixels).
 */
export interface PriceConditions {
  /** The requested resolution as the client wrote it; matched case-insensitively. */
  resolution?: string;
  /** Whether the call has video input; absent counts as false. */
  videoInput?: boolean;
  /** Pixels of one output image (width × height); absent matches no pixel tier. */
  outputPixels?: number;
  /** The call's `input_tokens` figure; absent matches no long-context tier. */
  inputTokens?: number;
}

/** The model's prices for one call: its base prices with the first matching tier's prices over them. */
export function pricesFor(pricing: Pricing, conditions: PriceConditions): PriceTable {
  const tier = pricing.priceTiers.find((candidate) => tierMatches(candidate, conditions));
  return tier ? overlaid(pricing.prices, tier) : { ...pricing.prices };
}

/** The base prices with a tier's over them. */
function overlaid(prices: PriceTable, tier: PriceTier): PriceTable {
  const result: PriceTable = { ...prices };
  for (const [name, price] of Object.entries(tier.prices)) {
    if (price !== undefined) result[name] = price;
  }
  return result;
}

/** Every condition the tier names must hold; an absent resolution matches no resolution tier. */
function tierMatches(tier: PriceTier, conditions: PriceConditions): boolean {
  if (tier.resolutions !== undefined) {
    const resolution = conditions.resolution?.toLowerCase();
    if (resolution === undefined || !tier.resolutions.includes(resolution)) return false;
  }
  if (tier.videoInput !== undefined && (conditions.videoInput ?? false) !== tier.videoInput) return false;
  if (tier.maxOutputPixels !== undefined) {
    if (conditions.outputPixels === undefined || conditions.outputPixels > tier.maxOutputPixels) return false;
  }
  if (tier.inputTokensAbove !== undefined) {
    if (conditions.inputTokens === undefined || conditions.inputTokens <= tier.inputTokensAbove) return false;
  }
  return true;
}
