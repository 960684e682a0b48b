import type { OwnerKind } from '../config/gateway-config';
import type { RateLimits } from '../config/rate-limits';

/** The authenticated caller of a data-plane request, as the key cache holds it. */
export interface Principal {
  keyId: string;
  displayPrefix: string;
  ownerId: string;
  ownerKind: OwnerKind;
  /** null: every model (`*`). */
  models: ReadonlySet<string> | null;
  enabled: boolean;
  expiresAt: Date | null;
  /** The key's own rate limits; null: none. */
  keyLimits: RateLimits | null;
  /** The owner's rate limits, shared by all its keys; null: none. */
  ownerLimits: RateLimits | null;
  /** The key's own budget (nano-units), within its owner's, in the owner's period; null: none. */
  keyBudgetNano: bigint | null;
}

export function mayUseModel(principal: Principal, modelId: string): boolean {
  return principal.models === null || principal.models.has(modelId);
}
