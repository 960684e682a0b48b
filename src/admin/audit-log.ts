import type { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { expiryOf } from './admin-values';
import type { AuditQuery } from './admin.dto';

/** What an admin change is about. */
export type AuditItemKind = 'owner' | 'key' | 'upstream' | 'model' | 'config' | 'session';

/** One admin change, as stored: items as the admin API shows them, so secrets are already masked. */
export interface AuditEntry {
  actor: string;
  /** `owner.create`, `key.disable`, `model.update`, `config.reload`, … */
  action: string;
  itemKind: AuditItemKind;
  itemId: string | null;
  before: unknown;
  after: unknown;
}

export interface AuditFilter {
  actor?: string;
  action?: string;
  itemKind?: string;
  itemId?: string;
  from?: string;
  to?: string;
  limit: number;
  after?: string;
}

interface AuditRecord {
  id: string;
  at: Date | string;
  actor: string;
  action: string;
  item_kind: string;
  item_id: string | null;
  before: unknown;
  after: unknown;
}

/** A page of GET /admin/audit (and of the command's `audit`) as the query string names it. */
export function auditFilterOf(query: AuditQuery, defaultLimit: number): AuditFilter {
  return {
    actor: query.actor,
    action: query.action,
    itemKind: query.item_kind,
    itemId: query.item_id,
    from: query.from,
    to: query.to,
    limit: query.limit ?? defaultLimit,
    after: query.after,
  };
}

/** The audit log of admin changes: written by every change of the admin API, the command line and reloads. */
export class AuditLog {
  constructor(private readonly dataSource: DataSource) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.dataSource.query(`INSERT INTO admin_audit (actor, action, item_kind, item_id, before, after) VALUES ($1, $2, $3, $4, $5, $6)`, [
      entry.actor,
      entry.action,
      entry.itemKind,
      entry.itemId,
      entry.before === undefined || entry.before === null ? null : JSON.stringify(entry.before),
      entry.after === undefined || entry.after === null ? null : JSON.stringify(entry.after),
    ]);
  }

  /** Newest first; `next` is the id to pass as `after` for the older page. */
  async list(filter: AuditFilter): Promise<{ data: Array<Record<string, unknown>>; next: string | null }> {
    const conditions: string[] = [];
    const values: unknown[] = [];
    const where = (sql: string, value: unknown) => {
      values.push(value);
      conditions.push(sql.replace('?', `$${values.length}`));
    };
    if (filter.actor !== undefined) where('actor = ?', filter.actor);
    if (filter.action !== undefined) where('action = ?', filter.action);
    if (filter.itemKind !== undefined) where('item_kind = ?', filter.itemKind);
    if (filter.itemId !== undefined) where('item_id = ?', filter.itemId);
    if (filter.from !== undefined) where('at >= ?', expiryOf(filter.from, 'from'));
    if (filter.to !== undefined) where('at < ?', expiryOf(filter.to, 'to'));
    if (filter.after !== undefined) {
      if (!/^\d{1,18}$/.test(filter.after)) throw new GatewayError('invalid_request', 'after: must be the next value of a page before');
      where('id < ?', filter.after);
    }
    values.push(filter.limit + 1);
    const rows = (await this.dataSource.query(
      `SELECT * FROM admin_audit ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${values.length}`,
      values,
    )) as AuditRecord[];
    const page = rows.slice(0, filter.limit);
    return {
      data: page.map((row) => ({
        id: String(row.id),
        at: new Date(row.at).toISOString(),
        actor: row.actor,
        action: row.action,
        item_kind: row.item_kind,
        item_id: row.item_id,
        before: row.before,
        after: row.after,
      })),
      next: rows.length > filter.limit ? String(page[page.length - 1].id) : null,
    };
  }
}
