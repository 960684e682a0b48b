/**
 * Answer shapes of the admin API, as src/admin/admin.views.ts and catalog.views.ts build them.
 * Amounts come twice: a decimal number and the exact integer nano-units (1e-9) as a string.
 */

export interface SessionView {
  signed_in: true;
  actor: string;
  csrf_token: string;
  expires_at: string;
}

export type OwnerKind = 'project' | 'member';

/** Rate limits of an owner (shared by its keys) or of a key alone (src/config/rate-limits.ts); null: that limit is not set. */
export interface RateLimits {
  /** Calls admitted in any sliding minute. */
  requests_per_minute: number | null;
  /** Input plus output tokens of the calls metered in any sliding minute. */
  tokens_per_minute: number | null;
  /** Calls under way at once. */
  concurrent_requests: number | null;
}

export type RateLimitName = keyof RateLimits;
export const RATE_LIMIT_NAMES: readonly RateLimitName[] = ['requests_per_minute', 'tokens_per_minute', 'concurrent_requests'];
export const OWNER_KINDS: readonly OwnerKind[] = ['project', 'member'];

/** The calendar period a budget starts again in (weeks from Monday); null: never. */
export type BudgetPeriod = 'day' | 'week' | 'month';

/** What a period took: an owner's current period, or a key's spend in its owner's period (for good when `period` is null). */
export interface PeriodSpendView {
  period: BudgetPeriod | null;
  start: string | null;
  resets_at: string | null;
  spent: number;
  reserved: number;
  spent_nano: string;
  reserved_nano: string;
}

export interface OwnerView {
  id: string;
  kind: OwnerKind;
  budget: number | null;
  spent: number;
  reserved: number;
  budget_nano: string | null;
  spent_nano: string;
  reserved_nano: string;
  /** Shared by all the owner's keys together; null: none. */
  limits: RateLimits | null;
  budget_period: BudgetPeriod | null;
  /** IANA time zone the periods are counted in; null: UTC. */
  budget_timezone: string | null;
  /** Per cent of the budget at which an alert fires, once per period. */
  alerts: number[];
  /** The period the budget applies to; null without a period (spent and reserved above are then the budget's). */
  current_period: PeriodSpendView | null;
  source: 'config' | 'admin';
  created_at: string;
  updated_at: string;
}

export interface KeyView {
  id: string;
  prefix: string;
  owner: string;
  models: string[];
  enabled: boolean;
  expires_at: string | null;
  /** The key's own limits (its owner's apply too); null: none. */
  limits: RateLimits | null;
  /** The key's own budget, in its owner's period, inside its owner's budget; null: none. */
  budget: number | null;
  budget_nano: string | null;
  /** The key's spend in its owner's current period (for good without one). */
  spend: PeriodSpendView;
  source: 'config' | 'admin';
  created_at: string;
  updated_at: string;
  /** In lists: start of the newest call recorded with the key; null when none is. Absent from older gateways. */
  last_used_at?: string | null;
}

export interface CreatedKeyView extends KeyView {
  key: string;
}

export interface Page<T> {
  data: T[];
  next: string | null;
}

export interface UsageRecordView {
  request_id: string;
  client_request_id: string | null;
  key_id: string;
  owner_id: string;
  model: string;
  interface: string;
  line: string | null;
  translated_to: string | null;
  status: number;
  error_code: string | null;
  stream: boolean;
  usage: Record<string, number> | null;
  cost: number;
  cost_nano: string;
  started_at: string;
  duration_ms: number;
  upstream_headers_ms: number | null;
  /** The call's `X-Gateway-Tags`; empty when it had none. */
  tags: string[];
  /** The end user the request body named (`user`; messages: `metadata.user_id`). */
  end_user: string | null;
  /** Attempts on upstream lines, failovers and retries each counted; 0 when no line was tried. */
  attempts: number;
  /** The line of each attempt, in order (a line tried again is listed again). */
  lines_tried: string[];
  written: boolean;
}

export interface DailyTotalView {
  day: string;
  model: string;
  /** Present when the query groups by owner. */
  owner?: string;
  /** Present when the query groups by tag; null: the records without tags. */
  tag?: string | null;
  calls: number;
  failed_calls: number;
  cost: number;
  cost_nano: string;
  usage: Record<string, number>;
}

/** The fields of a catalog model the console reads. */
export interface ModelView {
  id: string;
  interfaces: string[];
}

/** Where a catalog item comes from: the configuration file (applied again at every start) or the admin API. */
export type ItemSource = 'config' | 'admin';

/** A price tier as the catalog shows it (src/config/catalog-spec.ts `tierSpecOf`). */
export interface PriceTierView {
  resolution?: string[];
  video_input?: boolean;
  max_output_pixels?: number;
  input_tokens_above?: number;
  prices: Record<string, string>;
}

/**
 * A line of a model as an item with its own terms: `weight` (0–1000) its share of a call's first
 * attempt, 0 for failover only; `upstream_model` the model's name on that line.
 */
export interface ModelLineItem {
  id: string;
  weight?: number;
  upstream_model?: string;
}

/**
 * A model's line in the admin API, in views and bodies alike: a plain id when it has neither a
 * weight nor a model name of its own (the gateway writes every line as an item once any has a weight).
 */
export type ModelLine = string | ModelLineItem;

/** The line id and terms of a model's line, whichever way it is written. */
export function lineItemOf(line: ModelLine): ModelLineItem {
  return typeof line === 'string' ? { id: line } : line;
}

/**
 * A model's retries after every line failed; a field left out takes the gateway's setting
 * (RETRY_ATTEMPTS, RETRY_BACKOFF_MS, RETRY_MAX_BACKOFF_MS: 0, 250 and 5000 unless changed).
 */
export interface ModelRetry {
  /** 0–10. */
  attempts?: number;
  /** The first retry's back-off ceiling, doubling per retry (full jitter). */
  backoff_ms?: number;
  /** The longest wait; a vendor Retry-After longer than it ends the retries. */
  max_backoff_ms?: number;
}

export const RETRY_FIELDS = ['attempts', 'backoff_ms', 'max_backoff_ms'] as const satisfies ReadonlyArray<keyof ModelRetry>;

/** A catalog model as GET /admin/models shows it: the configuration-file item, defaults filled in, prices as exact decimal strings. */
export interface CatalogModelView extends ModelView {
  upstream_model: string;
  /** In failover order. */
  lines: ModelLine[];
  /** Absent: the gateway's RETRY_* settings. */
  retry?: ModelRetry;
  capabilities: { image_input?: boolean };
  max_tokens?: number;
  prices: Record<string, string>;
  price_tiers: PriceTierView[];
  source: ItemSource;
  version: number;
  created_at: string;
  updated_at: string;
}

/** What the catalog shows of a line's vendor key: never the key. */
export interface VendorKeyView {
  set: boolean;
  last4: string | null;
  /** The `${VAR}` reference each replica resolves; null for a literal key or a key of the file. */
  reference: string | null;
}

/** An upstream line as GET /admin/upstreams shows it. */
export interface UpstreamView {
  id: string;
  base_url: string;
  auth?: string;
  max_concurrency?: number;
  timeout_ms: number;
  api_key: VendorKeyView;
  source: ItemSource;
  version: number;
  created_at: string;
  updated_at: string;
}

/** Calls started in one minute (GET /admin/usage/minutes); minutes without calls are left out. */
export interface MinuteTotalView {
  minute: string;
  calls: number;
  failed_calls: number;
  cost: number;
  cost_nano: string;
}

/** A line's live state on the replica that answered (GET /admin/lines). */
export interface LineStateView {
  id: string;
  base_url: string;
  in_flight: number;
  max_concurrency: number | null;
  cooling: boolean;
  cooling_until: string | null;
  /** Until when the vendor asked for no calls (a 429's Retry-After); null: not now. */
  rate_limited_until: string | null;
}

export type VideoTaskState = 'open' | 'settled';

/** A video task (GET /admin/video-tasks, src/admin/operations.views.ts). */
export interface VideoTaskView {
  id: string;
  owner_id: string;
  key_id: string;
  interface: string;
  model: string;
  line: string | null;
  status: string;
  submit_request_id: string;
  submitted_at: string;
  reserved: number;
  reserved_nano: string;
  settled_at: string | null;
  settlement: string | null;
  cost: number | null;
  cost_nano: string | null;
  usage: Record<string, number> | null;
  polls: number;
  last_error: string | null;
}

/** A budget alert fired and its delivery (GET /admin/alerts). */
export interface AlertView {
  id: string;
  owner_id: string;
  /** Per cent of the budget reached. */
  threshold: number;
  period: { start: string | null; end: string | null };
  budget: number;
  /** Spent plus reserved in the period when the alert fired. */
  used: number;
  fired_at: string;
  /** When the webhook took it; null while undelivered. */
  delivered_at: string | null;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
}

export interface AuditEntryView {
  id: string;
  at: string;
  actor: string;
  action: string;
  item_kind: string;
  item_id: string | null;
  before: unknown;
  after: unknown;
}

/** The called interfaces (src/config/gateway-config.ts INTERFACE_NAMES), offered as filter suggestions. */
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

/** How a line sends its vendor key (src/config/gateway-config.ts UPSTREAM_AUTH_STYLES); absent: the called interface's default. */
export const UPSTREAM_AUTH_STYLES = ['bearer', 'x-api-key', 'x-alt-api-key'] as const;

/** Prices a model may name (src/config/prices.ts PRICE_FIELDS): tokens and characters per 1M, the others per unit. */
export const PRICE_UNITS = {
  input_tokens: 'per 1M tokens',
  cached_input_tokens: 'per 1M tokens',
  cache_write_input_tokens: 'per 1M tokens',
  cache_write_5m_input_tokens: 'per 1M tokens',
  cache_write_1h_input_tokens: 'per 1M tokens',
  output_tokens: 'per 1M tokens',
  input_text_tokens: 'per 1M tokens',
  input_image_tokens: 'per 1M tokens',
  output_text_tokens: 'per 1M tokens',
  output_image_tokens: 'per 1M tokens',
  thinking_tokens: 'per 1M tokens',
  output_video_tokens: 'per 1M tokens',
  input_characters: 'per 1M characters',
  output_images: 'per image',
  input_images: 'per image',
  output_seconds: 'per second',
  input_seconds: 'per second',
  input_image_count: 'per image',
} as const;

export type PriceName = keyof typeof PRICE_UNITS;
export const PRICE_NAMES = Object.keys(PRICE_UNITS) as PriceName[];

/**
 * The prices each interface's calls can be billed at (src/config/metered-figures.ts METERED_FIGURES):
 * the gateway refuses a price that none of a model's interfaces meters.
 */
export const METERED_PRICES: { readonly [name in (typeof INTERFACE_NAMES)[number]]: readonly PriceName[] } = {
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

/** The audit actions (src/admin/admin.dto.ts AuditQuery), offered as filter suggestions. */
export const AUDIT_ACTIONS = [
  'session.sign_in',
  'session.sign_out',
  'owner.create',
  'owner.budget',
  'owner.budget_terms',
  'owner.limits',
  'owner.renew_keys',
  'owner.alert',
  'key.create',
  'key.enable',
  'key.disable',
  'key.renew',
  'key.limits',
  'key.budget',
  'key.delete',
  'upstream.create',
  'upstream.update',
  'upstream.delete',
  'model.create',
  'model.update',
  'model.delete',
  'config.reload',
] as const;

export const AUDIT_ITEM_KINDS = ['owner', 'key', 'upstream', 'model', 'config', 'session'] as const;
