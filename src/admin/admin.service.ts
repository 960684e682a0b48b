import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { decimalToNano } from '../config/money';
import { isZonedDate } from '../config/config.loader';
import { KeyService } from '../auth/key.service';
import { CatalogService } from '../catalog/catalog.service';
import { UsageWriter } from '../metering/usage-writer.service';
import { AdminStore, KeyRow } from './admin-store';
import { UsageFilter, UsageQuery } from './usage-query';
import type { CreateKeyBody, CreateOwnerBody, DailyQuery, KeyListQuery, PageQuery, UsageListQuery } from './admin.dto';
import { CreatedKeyView, dailyView, keyView, ownerView, usageView } from './admin.views';

const DEFAULT_PAGE = 100;
const MAX_DAYS = 366;
const DAY_MS = 86_400_000;
const MAX_BIGINT = 2n ** 63n - 1n;

/** An amount of the API (number or decimal string; null: unlimited) in nano-units. */
export function amountOf(value: number | string | null | undefined, field: string): bigint | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' && typeof value !== 'string') throw new GatewayError('invalid_request', `${field}: must be a number`);
  let nano: bigint;
  try {
    nano = decimalToNano(value, field);
  } catch (error) {
    throw new GatewayError('invalid_request', (error as Error).message);
  }
  // The columns are PostgreSQL bigint: a larger amount would fail in the database (500).
  if (nano > MAX_BIGINT) throw new GatewayError('invalid_request', `${field}: ${value} is too large`);
  return nano;
}

/** An expiry of the API: an ISO 8601 date or zoned date-time; null: never. */
export function expiryOf(value: string | null | undefined, field: string): Date | null {
  if (value === null || value === undefined) return null;
  if (!isZonedDate(value)) {
    throw new GatewayError('invalid_request', `${field}: must be an ISO 8601 date or date-time with a zone, e.g. 2027-01-01T00:00:00Z`);
  }
  return new Date(value);
}

/** A new key's model scope: `["*"]` when `*` is among the ids, else the ids once each. */
export function keyScope(models: string[]): string[] {
  return models.includes('*') ? ['*'] : [...new Set(models)];
}

/** The ids of a new key's scope that `isKnown` (the catalog) does not know; `*` is always known. */
export function unknownModels(models: string[], isKnown: (model: string) => boolean): string[] {
  return models.filter((model) => model !== '*' && !isKnown(model));
}

function instantOf(value: string | undefined, field: string): Date | undefined {
  return value === undefined ? undefined : expiryOf(value, field)!;
}

/** Midnight UTC of a YYYY-MM-DD day that exists (2026-02-30 does not). */
function calendarDay(day: string, field: string): number {
  const time = Date.parse(`${day}T00:00:00Z`);
  // Year 0 parses in JavaScript but not in PostgreSQL, which has no year 0.
  if (Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== day || day.startsWith('0000')) {
    throw new GatewayError('invalid_request', `${field}: ${day} is not a calendar date`);
  }
  return time;
}

function statusFilter(status: string | undefined): UsageFilter['status'] {
  if (status === undefined) return undefined;
  return status.endsWith('xx') ? { class: Number(status[0]) } : { exact: Number(status) };
}

/**
 * The operator's API: owners and keys (through AdminStore, shared with the command line),
 * usage records and daily totals. A key changed here stops or starts working at once on this
 * replica and within the key cache's TTL on the others.
 */
@Injectable()
export class AdminService {
  private readonly store: AdminStore;
  private readonly usage: UsageQuery;

  constructor(
    dataSource: DataSource,
    private readonly keyService: KeyService,
    private readonly catalog: CatalogService,
    private readonly writer: UsageWriter,
  ) {
    this.store = new AdminStore(dataSource);
    this.usage = new UsageQuery(dataSource);
  }

  async createOwner(body: CreateOwnerBody) {
    return ownerView(await this.store.createOwner({ id: body.id, kind: body.kind, budgetNano: amountOf(body.budget, 'budget') }));
  }

  async owner(id: string) {
    return ownerView(await this.store.owner(id));
  }

  async owners(query: PageQuery) {
    const page = await this.store.owners(query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map(ownerView), next: page.next };
  }

  async setBudget(id: string, budget: number | string | null) {
    return ownerView(await this.store.setBudget(id, amountOf(budget, 'budget')));
  }

  async renewProjectKeys(ownerId: string, expiresAt: string | null) {
    const keys = await this.store.renewProjectKeys(ownerId, expiryOf(expiresAt, 'expires_at'));
    for (const key of keys) this.keyService.invalidate(key.keySha256);
    return { data: keys.map(keyView) };
  }

  async createKey(body: CreateKeyBody): Promise<CreatedKeyView> {
    const unknown = unknownModels(body.models, (model) => this.catalog.find(model) !== undefined);
    if (unknown.length > 0) {
      throw new GatewayError('invalid_request', `models: ${unknown.map((model) => JSON.stringify(model)).join(', ')} not in the catalog`);
    }
    const models = keyScope(body.models);
    const created = await this.store.createKey({ ownerId: body.owner, models, expiresAt: expiryOf(body.expires_at, 'expires_at') });
    // The key may have been presented (and found unknown) moments ago: forget that answer.
    this.keyService.invalidate(created.key.keySha256);
    return { ...keyView(created.key), key: created.plaintext };
  }

  async key(id: string) {
    return keyView(await this.store.key(id));
  }

  async keys(query: KeyListQuery) {
    const page = await this.store.keys(query.owner, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map(keyView), next: page.next };
  }

  setEnabled(id: string, enabled: boolean) {
    return this.changed(this.store.setEnabled(id, enabled));
  }

  renewKey(id: string, expiresAt: string | null) {
    return this.changed(this.store.renewKey(id, expiryOf(expiresAt, 'expires_at')));
  }

  deleteKey(id: string) {
    return this.changed(this.store.deleteKey(id));
  }

  async usageRecord(requestId: string) {
    const queued = this.writer.findQueued(requestId);
    if (queued) return usageView(queued, false);
    const stored = await this.usage.record(requestId);
    if (!stored) throw new GatewayError('not_found', `No usage record has the request id ${JSON.stringify(requestId)}.`);
    return usageView(stored, true);
  }

  async usageRecords(query: UsageListQuery) {
    const filter: UsageFilter = {
      ownerId: query.owner,
      keyId: query.key,
      model: query.model,
      interface: query.interface,
      status: statusFilter(query.status),
      from: instantOf(query.from, 'from'),
      to: instantOf(query.to, 'to'),
    };
    if (filter.from && filter.to && filter.to < filter.from) throw new GatewayError('invalid_request', 'to: must not be before from');
    const page = await this.usage.records(filter, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map((row) => usageView(row, true)), next: page.next };
  }

  async dailyTotals(query: DailyQuery) {
    const from = calendarDay(query.from, 'from');
    const to = calendarDay(query.to, 'to');
    if (to < from) throw new GatewayError('invalid_request', 'to: must not be before from');
    if ((to - from) / DAY_MS >= MAX_DAYS) throw new GatewayError('invalid_request', `to: at most ${MAX_DAYS} days after from`);
    const totals = await this.usage.daily(query, { ownerId: query.owner, model: query.model }, query.group_by === 'owner');
    return { data: totals.map(dailyView) };
  }

  private async changed(change: Promise<KeyRow>) {
    const key = await change;
    this.keyService.invalidate(key.keySha256);
    return keyView(key);
  }
}
