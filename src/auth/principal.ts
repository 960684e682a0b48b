import type { OwnerKind } from '../config/gateway-config';

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
}

export function mayUseModel(principal: Principal, modelId: string): boolean {
  return principal.models === null || principal.models.has(modelId);
}
