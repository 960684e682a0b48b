import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { KeyService } from '../auth/key.service';
import { CatalogService } from '../catalog/catalog.service';
import { UsageWriter } from '../metering/usage-writer.service';
import { Clock } from '../common/clock';
import { USAGE_RETENTION_SETTINGS, type UsageRetentionSettings } from '../config/settings/metering.settings';
import { AdminStore, KeyRow } from './admin-store';
import { amountOf, changesTerms, expiryOf, keyScope, limitsOf, termsOf, unknownModels } from './admin-values';
import { UsageReads } from './usage-reads';
import { SpendAudit } from './spend-audit';
import { AuditLog, auditFilterOf } from './audit-log';
import { AdminChanges } from './admin-changes';
import type {
  AuditQuery,
  CreateKeyBody,
  CreateOwnerBody,
  DailyQuery,
  KeyListQuery,
  MinutesQuery,
  PageQuery,
  SpendAuditQuery,
  UpdateKeyBody,
  UpdateOwnerBody,
  UsageListQuery,
} from './admin.dto';
import { CreatedKeyView, keyView, ListedKeyView, ownerView } from './admin.views';

const DEFAULT_PAGE = 100;

/**
 * The operator's API: owners and keys (through AdminStore, shared with the command line),
 * usage records, daily totals and the spend audit. A key changed here stops or starts working at once on this
 * replica and within the key cache's TTL on the others.
 */
@Injectable()
export class AdminService {
  private readonly store: AdminStore;
  private readonly usage: UsageReads;
  private readonly spendAudit: SpendAudit;
  private readonly changes: AdminChanges;

  constructor(
    dataSource: DataSource,
    private readonly keyService: KeyService,
    private readonly catalog: CatalogService,
    writer: UsageWriter,
    audit: AuditLog,
    clock: Clock,
    @Inject(USAGE_RETENTION_SETTINGS) retention: UsageRetentionSettings,
  ) {
    this.store = new AdminStore(dataSource);
    this.changes = new AdminChanges(this.store, audit);
    this.usage = new UsageReads(dataSource, (requestId) => writer.findQueued(requestId));
    this.spendAudit = new SpendAudit(dataSource, { retentionDays: retention.days, now: () => clock.now() });
  }

  async createOwner(body: CreateOwnerBody, actor: string) {
    const owner = { id: body.id, kind: body.kind, budgetNano: amountOf(body.budget, 'budget'), limits: limitsOf(body.limits), terms: termsOf(body) };
    return ownerView(await this.changes.createOwner(owner, actor));
  }

  async owner(id: string) {
    return ownerView(await this.store.owner(id));
  }

  async owners(query: PageQuery) {
    const page = await this.store.owners(query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map(ownerView), next: page.next };
  }

  /**
   * A change of the budget, the budget's period, time zone and alerts, the limits, or several
   * (each its own entry in the audit log). Every field is checked before anything changes.
   */
  async updateOwner(id: string, body: UpdateOwnerBody, actor: string) {
    const terms = changesTerms(body);
    if (body.budget === undefined && body.limits === undefined && !terms) {
      throw new GatewayError('invalid_request', 'body: give budget, budget_period, budget_timezone, alerts or limits');
    }
    const budgetNano = body.budget === undefined ? undefined : amountOf(body.budget, 'budget');
    if (body.limits !== undefined) limitsOf(body.limits);
    let row = await this.store.owner(id);
    if (terms) termsOf(body, row.terms);
    if (budgetNano !== undefined) row = await this.changes.setBudget(id, budgetNano, actor);
    if (terms) row = await this.changes.setTerms(id, (current) => termsOf(body, current), actor);
    if (body.limits !== undefined) {
      row = await this.changes.setOwnerLimits(id, (current) => limitsOf(body.limits, current), actor);
      // Cached keys carry their owner's limits: this replica forgets them now, the others within KEY_CACHE_TTL_MS.
      this.keyService.invalidate();
    }
    return ownerView(row);
  }

  async renewProjectKeys(ownerId: string, expiresAt: string | null, actor: string) {
    const keys = await this.changes.renewProjectKeys(ownerId, expiryOf(expiresAt, 'expires_at'), actor);
    for (const key of keys) this.keyService.invalidate(key.keySha256);
    return { data: keys.map(keyView) };
  }

  async createKey(body: CreateKeyBody, actor: string): Promise<CreatedKeyView> {
    const unknown = unknownModels(body.models, (model) => this.catalog.find(model) !== undefined);
    if (unknown.length > 0) {
      throw new GatewayError('invalid_request', `models: ${unknown.map((model) => JSON.stringify(model)).join(', ')} not in the catalog`);
    }
    const models = keyScope(body.models);
    const created = await this.changes.createKey(
      {
        ownerId: body.owner,
        models,
        expiresAt: expiryOf(body.expires_at, 'expires_at'),
        limits: limitsOf(body.limits),
        budgetNano: amountOf(body.budget, 'budget'),
      },
      actor,
    );
    // The key may have been presented (and found unknown) moments ago: forget that answer.
    this.keyService.invalidate(created.key.keySha256);
    return { ...keyView(created.key), key: created.plaintext };
  }

  async key(id: string) {
    const [listed] = await this.withLastUse([await this.store.key(id)]);
    return listed;
  }

  async keys(query: KeyListQuery) {
    const page = await this.store.keys(query.owner, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: await this.withLastUse(page.rows), next: page.next };
  }

  private async withLastUse(keys: KeyRow[]): Promise<ListedKeyView[]> {
    const lastUses = await this.usage.lastUses(keys.map((key) => key.id));
    return keys.map((key) => ({ ...keyView(key), last_used_at: lastUses.get(key.id)?.toISOString() ?? null }));
  }

  setEnabled(id: string, enabled: boolean, actor: string) {
    return this.changed(this.changes.setEnabled(id, enabled, actor));
  }

  renewKey(id: string, expiresAt: string | null, actor: string) {
    return this.changed(this.changes.renewKey(id, expiryOf(expiresAt, 'expires_at'), actor));
  }

  /** A change of the key's own limits, its own budget, or both (each its own entry in the audit log). */
  async updateKey(id: string, body: UpdateKeyBody, actor: string) {
    if (body.limits === undefined && body.budget === undefined) throw new GatewayError('invalid_request', 'body: give limits, budget or both');
    if (body.limits !== undefined) limitsOf(body.limits);
    const budgetNano = body.budget === undefined ? undefined : amountOf(body.budget, 'budget');
    let change: Promise<KeyRow> | undefined;
    if (budgetNano !== undefined) change = this.changes.setKeyBudget(id, budgetNano, actor);
    if (body.limits !== undefined) {
      if (change) await change;
      change = this.changes.setKeyLimits(id, (current) => limitsOf(body.limits, current), actor);
    }
    return this.changed(change!);
  }

  deleteKey(id: string, actor: string) {
    return this.changed(this.changes.deleteKey(id, actor));
  }

  audits(query: AuditQuery) {
    return this.changes.audit.list(auditFilterOf(query, DEFAULT_PAGE));
  }

  usageRecord(requestId: string) {
    return this.usage.usageRecord(requestId);
  }

  usageRecords(query: UsageListQuery) {
    return this.usage.usageRecords(query);
  }

  dailyTotals(query: DailyQuery) {
    return this.usage.dailyTotals(query);
  }

  minuteTotals(query: MinutesQuery) {
    return this.usage.minuteTotals(query);
  }

  /** The spend audit (spend-audit.ts) of the written records; a call still queued here is in none of the figures it compares. */
  verifySpend(query: SpendAuditQuery) {
    return this.spendAudit.verify(query);
  }

  private async changed(change: Promise<KeyRow>) {
    const key = await change;
    this.keyService.invalidate(key.keySha256);
    return keyView(key);
  }
}
