import type { RateLimits } from './rate-limits';
import type { BudgetTerms } from './budgets';

/**
 * The validated, typed configuration tree the rest of the gateway reads.
 * The YAML file (DESIGN.md section 3) is snake_case; this tree is camelCase, with money
 * already converted to exact integer nano-units (1e-9 of the currency).
 */

export const INTERFACE_NAMES = [
  'chat_completions',
  'responses',
  'messages',
  'embeddings',
  'images_a',
  'images_b',
  'images_c',
  'video_b',
  'video_c',
  'speech_c',
] as const;
export type InterfaceName = (typeof INTERFACE_NAMES)[number];

export const UPSTREAM_AUTH_STYLES = ['bearer', 'x-api-key', 'x-alt-api-key'] as const;
export type UpstreamAuthStyle = (typeof UPSTREAM_AUTH_STYLES)[number];

export interface UpstreamConfig {
  id: string;
  /** Provider root without trailing slash, e.g. `http://127.0.0.1:9100`. */
  baseUrl: string;
  apiKey: string;
  /** Absent: the default of the called interface (DESIGN.md section 3 table). */
  auth?: UpstreamAuthStyle;
  /** In-flight requests allowed on this line; absent = unlimited. */
  maxConcurrency?: number;
  /** No response headers within this time gives 504. */
  timeoutMs: number;
}

/**
 * Price of one metered figure. Token figures are priced per 1M tokens; counted figures
 * (images, seconds) per unit. Values are nano-units of the currency.
 */
export type PriceTable = Partial<Record<string, bigint>>;

/**
 * Prices for some calls only (`models[].price_tiers`). A tier names at least one condition;
 * every condition it names must hold. The first matching tier's prices replace the model's
 * prices for the figures it names (pricing.ts `pricesFor`).
 */
export interface PriceTier {
  /** Lower-cased resolutions the tier applies to; absent = any. */
  resolutions?: string[];
  /** true: only calls with video input; false: only calls without; absent: either. */
  videoInput?: boolean;
  /** Only output images of at most this many pixels; absent = any size. */
  maxOutputPixels?: number;
  /** Only calls whose `input_tokens` figure is above this (long-context prices); absent = any. */
  inputTokensAbove?: number;
  prices: PriceTable;
}

export interface ModelConfig {
  id: string;
  upstreamModel: string;
  interfaces: InterfaceName[];
  /** Upstream line ids, in failover order. */
  lines: string[];
  /**
   * The weight of each of `lines` (same order) in drawing a call's first line; failover then goes
   * through the others in order. Absent: the first usable line goes first.
   */
  lineWeights?: number[];
  /** A line's own name for the model (its `upstream_model`), where it differs from `upstreamModel`. */
  lineModels?: Readonly<Record<string, string>>;
  /** Retries of a call whose lines all failed; fields it lacks come from the RETRY_* settings. */
  retry?: RetryPolicy;
  capabilities: { imageInput: boolean };
  maxTokens?: number;
  prices: PriceTable;
  /** In file order; empty when the file gives none. */
  priceTiers: PriceTier[];
}

/** `models[].retry`: how often and after how long a call whose lines all failed is sent again. */
export interface RetryPolicy {
  /** Retries after the first pass over the lines; 0: none. */
  attempts?: number;
  /** The back-off of the first retry; each further retry's doubles, up to `maxBackoffMs`. */
  backoffMs?: number;
  /** The longest wait, for the back-off and for an upstream's `Retry-After`; a longer `Retry-After` ends the retries. */
  maxBackoffMs?: number;
}

export type OwnerKind = 'project' | 'member';

export interface OwnerConfig {
  id: string;
  kind: OwnerKind;
  /** Absent = unlimited. */
  budgetNano?: bigint;
  /** Rate limits shared by the owner's keys; null: none. */
  limits: RateLimits | null;
  /** Budget period, its time zone and alert thresholds. */
  terms: BudgetTerms;
}

export interface KeyConfig {
  /** SHA-256 of the plaintext key, lowercase hex. */
  keySha256: string;
  /** First characters of the plaintext key when the file gave it, for display; else a hash prefix. */
  displayPrefix: string;
  owner: string;
  /** Model ids, or `*`. */
  models: string[];
  enabled: boolean;
  expiresAt?: Date;
  /** The key's own rate limits; null: none. */
  limits: RateLimits | null;
  /** The key's own budget in its owner's period; absent = none. */
  budgetNano?: bigint;
}

export interface GatewayConfig {
  upstreams: UpstreamConfig[];
  models: ModelConfig[];
  owners: OwnerConfig[];
  keys: KeyConfig[];
}

/** Injection token of the loaded configuration. */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
