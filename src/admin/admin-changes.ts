import { AdminStore, KeyRow, NewKey, NewOwner, OwnerRow } from './admin-store';
import { AuditLog } from './audit-log';
import { keyView, ownerView } from './admin.views';
import type { RateLimits } from '../config/rate-limits';
import type { BudgetTerms } from '../config/budgets';

/**
 * The owner and key changes of the admin API and the command line, each written to the audit
 * log with who made it and the item before and after (as the API shows it: a key's hash and
 * the key itself never).
 */
export class AdminChanges {
  constructor(
    readonly store: AdminStore,
    readonly audit: AuditLog,
  ) {}

  async createOwner(owner: NewOwner, actor: string): Promise<OwnerRow> {
    const row = await this.store.createOwner(owner);
    await this.audit.record({ actor, action: 'owner.create', itemKind: 'owner', itemId: row.id, before: null, after: ownerView(row) });
    return row;
  }

  async setBudget(id: string, budgetNano: bigint | null, actor: string): Promise<OwnerRow> {
    const before = await this.store.owner(id);
    const row = await this.store.setBudget(id, budgetNano);
    await this.audit.record({ actor, action: 'owner.budget', itemKind: 'owner', itemId: id, before: ownerView(before), after: ownerView(row) });
    return row;
  }

  async setTerms(id: string, terms: (current: BudgetTerms) => BudgetTerms, actor: string): Promise<OwnerRow> {
    const before = await this.store.owner(id);
    const row = await this.store.setTerms(id, terms(before.terms));
    await this.audit.record({ actor, action: 'owner.budget_terms', itemKind: 'owner', itemId: id, before: ownerView(before), after: ownerView(row) });
    return row;
  }

  async setOwnerLimits(id: string, limits: (current: RateLimits | null) => RateLimits | null, actor: string): Promise<OwnerRow> {
    const before = await this.store.owner(id);
    const row = await this.store.setOwnerLimits(id, limits(before.limits));
    await this.audit.record({ actor, action: 'owner.limits', itemKind: 'owner', itemId: id, before: ownerView(before), after: ownerView(row) });
    return row;
  }

  async renewProjectKeys(ownerId: string, expiresAt: Date | null, actor: string): Promise<KeyRow[]> {
    const before = (await this.store.keys(ownerId, 1000, undefined)).rows;
    const keys = await this.store.renewProjectKeys(ownerId, expiresAt);
    await this.audit.record({
      actor,
      action: 'owner.renew_keys',
      itemKind: 'owner',
      itemId: ownerId,
      before: { keys: before.map(keyView) },
      after: { keys: keys.map(keyView) },
    });
    return keys;
  }

  async createKey(key: NewKey, actor: string): Promise<{ key: KeyRow; plaintext: string }> {
    const created = await this.store.createKey(key);
    await this.audit.record({ actor, action: 'key.create', itemKind: 'key', itemId: created.key.id, before: null, after: keyView(created.key) });
    return created;
  }

  setEnabled(id: string, enabled: boolean, actor: string): Promise<KeyRow> {
    return this.keyChange(id, enabled ? 'key.enable' : 'key.disable', actor, () => this.store.setEnabled(id, enabled));
  }

  renewKey(id: string, expiresAt: Date | null, actor: string): Promise<KeyRow> {
    return this.keyChange(id, 'key.renew', actor, () => this.store.renewKey(id, expiresAt));
  }

  async setKeyLimits(id: string, limits: (current: RateLimits | null) => RateLimits | null, actor: string): Promise<KeyRow> {
    const before = await this.store.key(id);
    const row = await this.store.setKeyLimits(id, limits(before.limits));
    await this.audit.record({ actor, action: 'key.limits', itemKind: 'key', itemId: id, before: keyView(before), after: keyView(row) });
    return row;
  }

  setKeyBudget(id: string, budgetNano: bigint | null, actor: string): Promise<KeyRow> {
    return this.keyChange(id, 'key.budget', actor, () => this.store.setKeyBudget(id, budgetNano));
  }

  deleteKey(id: string, actor: string): Promise<KeyRow> {
    return this.keyChange(id, 'key.delete', actor, () => this.store.deleteKey(id));
  }

  private async keyChange(id: string, action: string, actor: string, change: () => Promise<KeyRow>): Promise<KeyRow> {
    const before = await this.store.key(id);
    const row = await change();
    await this.audit.record({ actor, action, itemKind: 'key', itemId: id, before: keyView(before), after: action === 'key.delete' ? null : keyView(row) });
    return row;
  }
}
