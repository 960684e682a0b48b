import type { Principal } from '../../src/auth/principal';

/** A caller of every model, with no limits and no budget of its own, with the given fields instead. */
export function testPrincipal(fields: Partial<Principal> = {}): Principal {
  return {
    keyId: '6a1c0d2e-4b5f-4c3a-9d8e-7f6a5b4c3d2e',
    displayPrefix: 'gk-test',
    ownerId: 'team-a',
    ownerKind: 'project',
    models: null,
    enabled: true,
    expiresAt: null,
    keyLimits: null,
    ownerLimits: null,
    keyBudgetNano: null,
    ...fields,
  };
}
