import type { UsageFigures } from './usage-figures';
import type { PriceBasis } from './pricing';

/** A usage record as the request path produces it, before the writer stores it. */
export interface UsageDraft {
  requestId: string;
  clientRequestId: string | null;
  keyId: string;
  ownerId: string;
  model: string;
  interface: string;
  line: string | null;
  translatedTo: string | null;
  status: number;
  errorCode: string | null;
  stream: boolean;
  usage: UsageFigures | undefined;
  costNano: bigint;
  startedAt: Date;
  durationMs: number;
  upstreamHeadersMs: number | null;
  /** The call's `X-Gateway-Tags`, each once, in the header's order; null when it had none. */
  tags: readonly string[] | null;
  /** The end user the request body named (`user`, `metadata.user_id`), at most 256 characters. */
  endUser: string | null;
  /** The line of each attempt, in order, when the call made more than one (failover, retries); null for one or none. */
  linesTried: readonly string[] | null;
  /** The id of the prices the call was billed at (metering/price-sheets.ts); null: none kept. */
  priceSheet: string | null;
  /** What the price depended on beyond the figures; null for most calls. */
  priceBasis: PriceBasis | null;
}
